//! The browser tests' tools: a headless Chromium, when the machine has
//! one, and a decoded screenshot to count its colours.

/// Headless Chromium for the browser tests: its path, or None after a loud
/// "SKIPPED" banner naming `what` — unless `SECKILL_REQUIRE_CHROMIUM` is set
/// (CI), where a missing browser fails the test.
pub fn chromium(what: &str) -> Option<&'static str> {
    const CANDIDATES: [&str; 2] = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
    if let Some(path) = CANDIDATES
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    {
        return Some(path);
    }
    crate::skip_unless_required(
        "SECKILL_REQUIRE_CHROMIUM",
        what,
        "chromium is missing",
        "apt-get install -y chromium (or scripts/services.sh)",
    );
    None
}

/// A decoded 8-bit PNG (a browser screenshot), as RGB pixels.
#[derive(Debug)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<[u8; 3]>,
}

impl Image {
    /// Decode the PNG at `path` (RGB or RGBA; alpha dropped).
    pub fn decode(path: &std::path::Path) -> Self {
        let file = std::fs::File::open(path).expect("screenshot written");
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buffer = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buffer).expect("a frame");
        let channels = match info.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => panic!("unexpected PNG colour type {other:?}"),
        };
        let rgb = buffer[..info.buffer_size()]
            .chunks_exact(channels)
            .map(|px| [px[0], px[1], px[2]])
            .collect();
        Self {
            width: info.width,
            height: info.height,
            rgb,
        }
    }

    /// How many different colours the picture has.
    pub fn distinct_colours(&self) -> usize {
        let mut seen: Vec<[u8; 3]> = self.rgb.clone();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    /// Pixels whose every channel is within `max_diff` of `colour`
    /// (anti-aliasing aside).
    pub fn count_near(&self, colour: [u8; 3], max_diff: u8) -> usize {
        self.rgb
            .iter()
            .filter(|px| {
                px.iter()
                    .zip(colour)
                    .all(|(a, b)| a.abs_diff(b) <= max_diff)
            })
            .count()
    }
}
