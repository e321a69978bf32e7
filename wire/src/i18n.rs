//! The language of the lab's two pages (the replicas' status page and the
//! console): English or Chinese. The page's script ([`SCRIPT`], shared by
//! both) translates on the browser's side; the server only chooses the
//! default from `Accept-Language` and inlines the script, so both pages
//! stay one self-contained file with no external fetch.

/// The shared translation script (`seckillI18n`), inlined where a page
/// holds [`PLACEHOLDER`].
pub const SCRIPT: &str = include_str!("i18n.js");

/// Where a page wants [`SCRIPT`].
pub const PLACEHOLDER: &str = "/*seckill-i18n*/";

/// The languages a page speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
}

impl Lang {
    /// The language an `Accept-Language` header prefers: Chinese when its
    /// most wanted tag (highest `q`, the first among equals) is `zh` or
    /// `zh-*`; English otherwise, and without the header.
    pub fn from_accept_language(header: Option<&str>) -> Lang {
        let mut best: Option<(f32, &str)> = None;
        for part in header.unwrap_or("").split(',') {
            let mut fields = part.split(';').map(str::trim);
            let tag = fields.next().unwrap_or("");
            if tag.is_empty() {
                continue;
            }
            let q = fields
                .find_map(|f| f.strip_prefix("q="))
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            if best.is_none_or(|(top, _)| q > top) {
                best = Some((q, tag));
            }
        }
        match best {
            Some((q, tag)) if q > 0.0 && is_chinese(tag) => Lang::Zh,
            _ => Lang::En,
        }
    }

    /// Its `<html lang>`.
    pub fn html_tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        }
    }
}

fn is_chinese(tag: &str) -> bool {
    let tag = tag.to_ascii_lowercase();
    tag == "zh" || tag.starts_with("zh-")
}

/// `page` ready to serve in `lang`: the script inlined, `<html lang="en">`
/// set to the language.
pub fn page(page: &str, lang: Lang) -> String {
    page.replacen(PLACEHOLDER, SCRIPT, 1).replacen(
        "<html lang=\"en\">",
        &format!("<html lang=\"{}\">", lang.html_tag()),
        1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_wanted_language_decides() {
        let of = |h: &str| Lang::from_accept_language(Some(h));
        assert_eq!(of("zh-CN,zh;q=0.9,en;q=0.8"), Lang::Zh);
        assert_eq!(of("zh"), Lang::Zh);
        assert_eq!(of("zh-Hant-TW"), Lang::Zh);
        assert_eq!(of("en-US,en;q=0.9,zh-CN;q=0.8"), Lang::En);
        assert_eq!(of("en;q=0.5, zh-CN;q=0.9"), Lang::Zh);
        assert_eq!(of("zhx"), Lang::En);
        assert_eq!(of("zh;q=0"), Lang::En);
        assert_eq!(Lang::from_accept_language(None), Lang::En);
    }

    #[test]
    fn the_page_gets_the_script_and_its_language() {
        let served = page(
            "<html lang=\"en\"><script>/*seckill-i18n*/</script>",
            Lang::Zh,
        );
        assert!(served.starts_with("<html lang=\"zh-CN\"><script>// The lab's pages"));
        assert!(served.contains("function seckillI18n("));
        assert!(!served.contains(PLACEHOLDER));
    }
}
