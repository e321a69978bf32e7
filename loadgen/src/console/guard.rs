//! Only the room's own page drives the room: every state-changing route
//! (any method but `GET`, `HEAD`, `OPTIONS`) refuses a request a browser
//! marks as sent by another site, `403 {"error": "cross_site"}`, before the
//! handler runs. Without this, any web page the teacher has open could post
//! a form to `http://127.0.0.1:8089/api/reset` (a "simple" request: no
//! preflight) and clear the faults in force.
//!
//! A browser tells where a request comes from in two headers:
//! `Sec-Fetch-Site`, which decides when present (`same-origin`, or `none`
//! for a request the user typed, pass; anything else is refused), and,
//! from browsers too old to send it, `Origin` (its host must be the `Host`
//! the request was sent to; `null`, as a sandboxed frame sends, is
//! refused). A request with neither comes from no browser page (curl, a
//! script, the load generator) and passes: the admin token, not this
//! guard, is what keeps those out of the service.

use actix_web::body::{BoxBody, EitherBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method};
use actix_web::middleware::Next;
use actix_web::HttpResponse;

/// Why `request` is refused as cross-site (`None`: it may go on).
pub fn cross_site(
    method: &Method,
    host: Option<&str>,
    origin: Option<&str>,
    fetch_site: Option<&str>,
) -> Option<String> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    // The browser's own word, which no page can forge, when it gives it
    // (a proxy that rewrites `Host` does not change it).
    match fetch_site {
        Some("same-origin" | "none") => return None,
        Some(site) => return Some(format!("Sec-Fetch-Site: {site}")),
        None => {}
    }
    let origin = origin?;
    let origin_host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    match (origin_host, host) {
        (Some(from), Some(to)) if from.eq_ignore_ascii_case(to) => None,
        _ => Some(format!(
            "Origin {origin} is not this console ({})",
            host.unwrap_or("no Host header")
        )),
    }
}

/// The middleware: [`cross_site`] on every request.
pub async fn refuse_cross_site(
    request: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<ServiceResponse<EitherBody<BoxBody>>, actix_web::Error> {
    let text = |name: header::HeaderName| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let refused = cross_site(
        request.method(),
        text(header::HOST).as_deref(),
        text(header::ORIGIN).as_deref(),
        text(header::HeaderName::from_static("sec-fetch-site")).as_deref(),
    );
    match refused {
        None => Ok(next.call(request).await?.map_into_left_body()),
        Some(why) => {
            eprintln!(
                "console: refused a cross-site {} {} ({why})",
                request.method(),
                request.path()
            );
            let answer = HttpResponse::Forbidden().json(serde_json::json!({
                "error": "cross_site",
                "message": format!(
                    "the console takes controls only from its own page ({why})"
                ),
            }));
            Ok(request.into_response(answer).map_into_right_body())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: Option<&str> = Some("127.0.0.1:8089");

    #[test]
    fn the_page_itself_and_clients_without_a_browser_pass() {
        let post = Method::POST;
        assert_eq!(cross_site(&post, HOST, None, None), None, "curl");
        let own = Some("http://127.0.0.1:8089");
        assert_eq!(cross_site(&post, HOST, own, Some("same-origin")), None);
        assert_eq!(cross_site(&post, HOST, own, None), None);
        assert_eq!(cross_site(&post, HOST, None, Some("none")), None);
    }

    #[test]
    fn another_site_is_refused_by_either_header() {
        let post = Method::POST;
        let evil = Some("http://evil.example");
        assert!(cross_site(&post, HOST, evil, Some("cross-site")).is_some());
        assert!(
            cross_site(&post, HOST, evil, None).is_some(),
            "Origin alone"
        );
        assert!(
            cross_site(&post, HOST, None, Some("same-site")).is_some(),
            "another port of the same host is another origin"
        );
        assert!(cross_site(&post, HOST, Some("null"), None).is_some());
        assert!(cross_site(&Method::PUT, HOST, Some("http://127.0.0.1:9999"), None).is_some());
        assert!(
            cross_site(
                &post,
                HOST,
                Some("http://127.0.0.1:8089"),
                Some("cross-site")
            )
            .is_some(),
            "Sec-Fetch-Site decides"
        );
        assert!(cross_site(&Method::DELETE, None, Some("http://127.0.0.1:8089"), None).is_some());
    }

    #[test]
    fn reads_are_not_guarded() {
        let evil = Some("http://evil.example");
        assert_eq!(
            cross_site(&Method::GET, HOST, evil, Some("cross-site")),
            None
        );
    }
}
