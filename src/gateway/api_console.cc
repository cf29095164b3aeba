// The browser console's files (issue 6).

#include "api_routes.h"

#include "console_files.h"

namespace ringlog::gateway::routes {

// -- the browser console (issue 6)

/// Content-Security-Policy of the console's pages: its own scripts, styles and API only (the
/// WebSocket is same-origin, which 'self' covers), and no framing (clickjacking).
constexpr const char* console_csp =
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

/// GET|HEAD /console, /console/ and /console/{file}: the console's files, embedded at build time
/// (web-console/embed_console.py); /console is index.html, which loads the rest by absolute URL.
/// Cache-Control no-cache with a strong ETag: the browser revalidates every load and gets 304
/// while the bytes are unchanged, so a new binary's console shows at once. Unknown files: 404.
void console_get(const call_ptr& c) {
  auto it = c->params.find("file");
  std::string name = it == c->params.end() ? "index.html" : it->second;
  auto files = console_files();
  auto f = std::find_if(files.begin(), files.end(), [&](const console_file& e) { return e.name == name; });
  if (f == files.end()) {
    return c->fail(404, ec::not_found, "no console file \"" + name + "\"; the console starts at /console");
  }
  http_response r;
  r.headers.emplace_back("ETag", std::string(f->etag));
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (f->content_type.starts_with("text/html")) r.headers.emplace_back("Content-Security-Policy", console_csp);
  if (etag_matches(c->request.if_none_match, f->etag)) {
    r.status = 304;
    r.content_type.clear();
    return c->respond(std::move(r));
  }
  r.content_type = std::string(f->content_type);
  r.body = std::string(f->bytes);
  c->respond(std::move(r));
}

}  // namespace ringlog::gateway::routes
