//! Who may drive the room.
//!
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

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method};
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};

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
pub async fn refuse_cross_site<B: MessageBody + 'static>(
    request: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
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

/// The cookie a logged-in browser carries.
const COOKIE: &str = "seckill_console";

/// Who may drive a console that listens beyond loopback: whoever logs in
/// with the service's admin token (the console holds it, and hands its
/// powers to whoever drives the page). A login sets an `HttpOnly`,
/// `SameSite=Strict` cookie holding a random session id of this console
/// process, never the token; a script may send the token as
/// `Authorization: Bearer` instead. On loopback no login is asked (no
/// [`Login`] is registered).
#[derive(Debug, Clone)]
pub struct Login {
    token: String,
    session: String,
}

impl Login {
    /// A login for `token`, with a fresh session id.
    pub fn new(token: &str) -> Self {
        let session: String = (0..32)
            .map(|_| char::from_digit(rand::random_range(0..16u32), 16).unwrap_or('0'))
            .collect();
        Self {
            token: token.to_owned(),
            session,
        }
    }

    /// Whether `token` is the admin token (every byte compared).
    fn is_token(&self, token: &str) -> bool {
        let (a, b) = (self.token.as_bytes(), token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
    }

    /// Whether the request carries this console's session cookie or the
    /// admin token.
    fn admits(&self, headers: &header::HeaderMap) -> bool {
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
        let cookie = text(header::COOKIE).is_some_and(|cookies| {
            cookies.split(';').any(|c| {
                c.trim()
                    .strip_prefix(COOKIE)
                    .and_then(|rest| rest.strip_prefix('='))
                    == Some(self.session.as_str())
            })
        });
        let bearer = text(header::AUTHORIZATION)
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| self.is_token(t.trim()));
        cookie || bearer
    }

    /// The `Set-Cookie` of a successful login.
    fn cookie(&self) -> String {
        format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            self.session
        )
    }
}

/// The login page (`GET /` without a login), with `note` above the form.
fn login_page(note: &str) -> HttpResponse {
    let note = note
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    HttpResponse::Unauthorized()
        .content_type("text/html; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .body(format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>seckill-lab · console login</title>\
             <style>body{{background:#0b1020;color:#f2f5ff;font:16px system-ui,sans-serif;padding:10vh 10vw}}\
             input,button{{font:inherit;padding:4px 8px}}.note{{color:#ff9b9b}}</style></head><body>\
             <h1>seckill-lab console</h1><p>This console listens beyond loopback: only the teacher drives the room. \
             Log in with the stack's admin token (printed when the stack started). · \
             这个控制台对外网开放：请用管理令牌登录。</p><p class=\"note\">{note}</p>\
             <form method=\"post\" action=\"/login\"><input type=\"password\" name=\"token\" \
             data-testid=\"login-token\" autocomplete=\"current-password\" autofocus> \
             <button type=\"submit\" data-testid=\"login\">Log in · 登录</button></form></body></html>"
        ))
}

/// The middleware of a console beyond loopback: a request without the
/// session cookie or the token gets the login page (`GET /`) or
/// `401 {"error": "unauthenticated"}`, before any handler runs. The login
/// form and the charting library's files are open.
pub async fn require_login<B: MessageBody + 'static>(
    request: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let Some(login) = request.app_data::<web::Data<Login>>().cloned() else {
        return Ok(next.call(request).await?.map_into_left_body());
    };
    let path = request.path();
    if path == "/login" || path.starts_with("/assets/") || login.admits(request.headers()) {
        return Ok(next.call(request).await?.map_into_left_body());
    }
    let answer = if request.method() == Method::GET && path == "/" {
        login_page("")
    } else {
        HttpResponse::Unauthorized().json(serde_json::json!({
            "error": "unauthenticated",
            "message": "this console listens beyond loopback: log in at / with the admin token, \
                        or send it as Authorization: Bearer",
        }))
    };
    Ok(request.into_response(answer).map_into_right_body())
}

/// `POST /login` (a form: `token`): the session cookie and back to the
/// page, or the login page again (`401`) for a wrong token. On loopback,
/// where nothing is asked, straight back to the page.
pub async fn log_in(
    login: Option<web::Data<Login>>,
    form: web::Form<std::collections::HashMap<String, String>>,
) -> HttpResponse {
    let Some(login) = login else {
        return HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/"))
            .finish();
    };
    match form.get("token") {
        Some(token) if login.is_token(token.trim()) => HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/"))
            .insert_header((header::SET_COOKIE, login.cookie()))
            .finish(),
        _ => {
            eprintln!("console: a login with a wrong token was refused");
            login_page("That is not the admin token. · 令牌不对。")
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
