//! OpenWebText-style documents, `<n>.txt`, each an HTML page as scraped from the web: head with
//! title, meta, scripts and styles, a navigation bar, the article (title and paragraphs of
//! English-like prose), related links and a footer. Extracting the article from the page is
//! the NLP pipeline's first step.

use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;

use workloads::rng::SeededRng;

use crate::files::Files;
use crate::prose::{sentence, title, word};
use crate::source::{flat_source, Source};
use crate::{Calibration, DatasetError, DatasetKind, GenerateRequest};

pub const KIND: DatasetKind = DatasetKind {
    name: "openwebtext",
    family: "openwebtext",
    real: "OpenWebText subset",
    layout: "<n>.txt (HTML pages whose main text is the article)",
    samples_per_file: 1,
    calibration: Calibration::of(0.0427, 0.15),
    options: &[],
    reader_options: &[],
    open,
    generate_one: Some(generate_one),
    finish: None,
    expected_mb: None,
    fields: |_| &[],
    cheap_to_generate: false,
};

fn identifier(rng: &mut SeededRng) -> String {
    let (a, b) = (word(rng), word(rng));
    format!(
        "{a}{}",
        b.chars()
            .next()
            .map(|c| c.to_ascii_uppercase().to_string() + &b[1..])
            .unwrap_or_default()
    )
}

fn script(rng: &mut SeededRng) -> String {
    let mut js = String::from("<script type=\"text/javascript\">\n");
    for _ in 0..8 + rng.below(40) {
        let (f, v) = (identifier(rng), identifier(rng));
        let _ = writeln!(js, "  function {f}({v}) {{ var {} = document.getElementById(\"{}\"); if ({v} && {v}.length > {}) {{ return {v}.slice(0, {}); }} return null; }}", identifier(rng), word(rng), rng.below(100), rng.below(50));
    }
    js.push_str("</script>\n");
    js
}

fn style(rng: &mut SeededRng) -> String {
    let mut css = String::from("<style>\n");
    for _ in 0..10 + rng.below(40) {
        let _ = writeln!(
            css,
            "  .{}-{} {{ margin: {}px {}px; color: #{:06x}; font-size: {}px; }}",
            word(rng),
            word(rng),
            rng.below(30),
            rng.below(30),
            rng.below(1 << 24),
            10 + rng.below(14)
        );
    }
    css.push_str("</style>\n");
    css
}

fn links(rng: &mut SeededRng, class: &str, count: u64) -> String {
    let mut out = format!("<ul class=\"{class}\">\n");
    for _ in 0..count {
        let _ = writeln!(
            out,
            "  <li><a href=\"/{}/{}-{}\">{}</a></li>",
            word(rng),
            word(rng),
            rng.below(100_000),
            title(rng)
        );
    }
    out.push_str("</ul>\n");
    out
}

/// Writes `<n>.txt`, one page.
pub fn generate_one(request: &GenerateRequest, n: usize) -> Result<(), DatasetError> {
    let mut rng = SeededRng::from_parts(&[request.seed, n as u64, 0x0e7]);
    let headline = title(&mut rng);
    let mut page = String::with_capacity(48_000);
    let _ = write!(page, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{headline} | {}</title>\n", title(&mut rng));
    let _ = writeln!(
        page,
        "<meta name=\"description\" content=\"{}\">",
        sentence(&mut rng)
    );
    // Pages are mostly markup and inline scripts: OpenWebText's 42.7 KB pages hold about
    // 3.3 KB of article text (the paper's extracted size), which these proportions follow.
    for _ in 0..3 + rng.below(8) {
        page.push_str(&script(&mut rng));
    }
    page.push_str(&style(&mut rng));
    page.push_str("</head>\n<body>\n<nav>\n");
    let nav = 8 + rng.below(30);
    page.push_str(&links(&mut rng, "menu", nav));
    page.push_str("</nav>\n<div class=\"cookie-banner\">We use cookies to improve your experience. <a href=\"/privacy\">Learn more</a></div>\n");
    let _ = write!(
        page,
        "<article>\n<h1>{headline}</h1>\n<p class=\"byline\">By {} {} | {}</p>\n",
        crate::prose::title(&mut rng)
            .split(' ')
            .next()
            .unwrap_or("Staff"),
        word(&mut rng),
        2010 + rng.below(10)
    );
    // Article lengths vary widely, as web pages do (2 to 16 paragraphs, 9 on average).
    let paragraphs = 2 + rng.below(15);
    let mut article = crate::prose::Article::default();
    for i in 0..paragraphs {
        if i > 0 && rng.below(8) == 0 {
            let _ = writeln!(page, "<h2>{}</h2>", title(&mut rng));
        }
        let _ = writeln!(page, "<p>{}</p>", article.paragraph(&mut rng));
        if rng.below(10) == 0 {
            let _ = writeln!(
                page,
                "<div class=\"ad\"><script>{}();</script>Advertisement</div>",
                identifier(&mut rng)
            );
        }
    }
    page.push_str("</article>\n<aside>\n<h3>Related</h3>\n");
    let related = 4 + rng.below(12);
    page.push_str(&links(&mut rng, "related", related));
    let footer = 5 + rng.below(15);
    let _ = write!(
        page,
        "</aside>\n<footer>\n<p>Copyright {} {}. All rights reserved.</p>\n{}</footer>\n",
        2010 + rng.below(10),
        title(&mut rng),
        links(&mut rng, "footer", footer)
    );
    page.push_str(&script(&mut rng));
    page.push_str("</body>\n</html>\n");
    crate::write_atomically(&request.root.join(format!("{n}.txt")), page.as_bytes())
}

pub fn open(
    files: &Arc<dyn Files>,
    root: &Path,
    _options: &crate::Options,
) -> Result<Source, DatasetError> {
    flat_source(
        files,
        "openwebtext",
        root,
        root,
        "txt",
        "<n>.txt documents (the OpenWebText layout)",
    )
}
