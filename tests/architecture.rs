//! Checks the shape of the three crates on their own source, on every `cargo test`: the
//! harness's folders depend one way ([`LAYERS`]); no two files of a crate name each other's
//! items, directly or round a longer loop (a file-level cycle); no file is over [`MAX_LINES`]
//! lines and no function over [`MAX_FN_LINES`] without saying why where it starts.
//!
//! The source is read, not compiled: comments, strings and `#[cfg(test)]` items are blanked,
//! `use` trees are parsed, and a path (`crate::a::b`, `super::c`, or a name a `use` or `mod`
//! made for a module) points at the longest prefix that is a file of the crate. Import items
//! from the file that defines them, not through a re-export, or the check sees the re-exporter.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The harness's folders (and leaf files) from the bottom up: each may use only those before it.
const LAYERS: &[&[&str]] = &[
    &["markdown", "progress", "scratch", "units"],
    &["results"],
    &["store"],
    &["analysis"],
    &["measure"],
    &["plan"],
    &["cli"],
];

/// A file longer than this holds two concepts, unless its module doc says why not.
const MAX_LINES: usize = 600;
/// How a long file's module doc starts its reason.
const LONG_FILE_REASON: &str = "//! Long file:";
/// A function longer than this mixes phases, unless the comments above it say why not.
const MAX_FN_LINES: usize = 120;
/// How a long function's doc comment starts its reason.
const LONG_FN_REASON: &str = "Long function:";
/// The crates checked, by folder.
const CRATES: &[&str] = &["workloads", "datasets", "harness"];

/// One source file: where it is, the module path it defines, its text and its code (comments
/// and literals blanked, line structure kept).
struct SourceFile {
    path: PathBuf,
    module: Vec<String>,
    text: String,
    code: String,
}

impl SourceFile {
    /// `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `lib.rs` and `main.rs` the crate root.
    fn module_of(src: &Path, path: &Path) -> Vec<String> {
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        parts
    }

    /// Whether `super` here is the parent of this file's module (a `mod.rs` or crate root is
    /// its module; any other file is a module inside its folder's).
    fn is_folder_root(&self) -> bool {
        matches!(
            self.path.file_name().and_then(|n| n.to_str()),
            Some("mod.rs" | "lib.rs" | "main.rs")
        )
    }

    fn display(&self) -> String {
        let text = self.path.display().to_string();
        match text.find("/../") {
            Some(at) => text[at + 4..].to_string(),
            None => text,
        }
    }
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

fn load_crate(name: &str) -> Vec<SourceFile> {
    let src = crate_src(name);
    rust_files(&src)
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            SourceFile {
                module: SourceFile::module_of(&src, &path),
                code: blank_comments_and_literals(&text),
                text,
                path,
            }
        })
        .collect()
}

/// `text` with comments, string and character literals replaced by spaces (newlines kept), so
/// that braces and paths in them are not seen.
fn blank_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('#' | '"'))
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"..." or r#"..."#.
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.push('r');
            for _ in 0..hashes + 1 {
                out.push(' ');
            }
            i += 2 + hashes;
            while i < chars.len() {
                if chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|&h| h == '#') {
                    i += 1 + hashes;
                    for _ in 0..hashes + 1 {
                        out.push(' ');
                    }
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}'), or a lifetime ('a), left as it is.
            let literal_end = if next == Some('\\') {
                (i + 2..chars.len()).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match literal_end {
                Some(end) => {
                    for _ in i..=end {
                        out.push(' ');
                    }
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `code` with every `#[cfg(test)]` item (a test module, a test-only function) blanked.
fn without_test_items(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let text: String = out.iter().collect();
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]").map(|a| a + from) {
        let rest = &text[at..];
        let brace = rest.find('{');
        let semi = rest.find(';');
        let end = match (brace, semi) {
            (Some(b), Some(s)) if s < b => at + s,
            (None, Some(s)) => at + s,
            (Some(b), _) => {
                let mut depth = 0usize;
                let mut end = text.len() - 1;
                for (k, ch) in text[at + b..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = at + b + k;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, None) => text.len() - 1,
        };
        // Byte offsets to char offsets: the code is ASCII outside blanked literals, but be safe.
        let (a, e) = (text[..at].chars().count(), text[..=end].chars().count());
        for ch in &mut out[a..e] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
        from = end + 1;
    }
    out.into_iter().collect()
}

/// One path a `use` tree names, and the name it binds (`None` for a glob).
fn use_tree(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let mut base = prefix.to_vec();
        base.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (k, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    use_tree(&base, &inner[start..k], out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        use_tree(&base, &inner[start..], out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p.trim(), Some(a.trim().to_string())),
        None => (tree, None),
    };
    let mut segments = prefix.to_vec();
    segments.extend(
        path.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from),
    );
    if segments.last().map(String::as_str) == Some("*") {
        segments.pop();
        out.push((segments, None));
        return;
    }
    if segments.last().map(String::as_str) == Some("self") {
        segments.pop();
    }
    let name = alias.or_else(|| segments.last().cloned());
    out.push((segments, name));
}

/// The crate-relative module path that `path` (starting `crate`, `super` or `self`) names, as
/// seen from `file`.
fn absolute(file: &SourceFile, path: &[String]) -> Option<Vec<String>> {
    let mut here = file.module.clone();
    let mut rest;
    match path.first().map(String::as_str) {
        Some("crate") => {
            here.clear();
            rest = &path[1..];
        }
        Some("self") => rest = &path[1..],
        Some("super") => {
            if !file.is_folder_root() || !here.is_empty() {
                here.pop();
            }
            rest = &path[1..];
            while rest.first().map(String::as_str) == Some("super") {
                here.pop();
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    here.extend(rest.iter().cloned());
    Some(here)
}

/// The file module a full path lies in (the longest prefix that is a file), and whether the
/// path is that module itself.
fn file_of(modules: &BTreeSet<Vec<String>>, full: &[String]) -> Option<(Vec<String>, bool)> {
    (0..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|prefix| modules.contains(prefix))
        .map(|m| {
            let exact = m.len() == full.len();
            (m, exact)
        })
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The `a::b::c` path starting at byte `at` of `code`.
fn path_at(code: &str, at: usize) -> Vec<String> {
    let mut segments = Vec::new();
    let mut rest = &code[at..];
    loop {
        let ident: String = rest.chars().take_while(|&c| is_ident(c)).collect();
        if ident.is_empty() {
            break;
        }
        rest = &rest[ident.len()..];
        segments.push(ident);
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(is_ident) => rest = r,
            _ => break,
        }
    }
    segments
}

/// The byte ranges of the inline `mod name { ... }` bodies of `code` (test modules are blanked
/// before this is asked).
fn inline_modules(code: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("mod ").map(|a| a + from) {
        from = at + 4;
        if at > 0 && code[..at].ends_with(is_ident) {
            continue;
        }
        let rest = code[from..].trim_start();
        let name_len = rest.chars().take_while(|&c| is_ident(c)).count();
        if name_len == 0 || !rest[name_len..].trim_start().starts_with('{') {
            continue;
        }
        let open = from + code[from..].find('{').unwrap_or(0);
        let mut depth = 0usize;
        for (k, ch) in code[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push(open..open + k);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// `path` as written at byte `at`: inside an inline module, its first `super`s climb out of
/// that module rather than out of the file's.
fn from_inline(path: Vec<String>, at: usize, inline: &[std::ops::Range<usize>]) -> Vec<String> {
    let depth = inline.iter().filter(|r| r.contains(&at)).count();
    let supers = path.iter().take_while(|s| *s == "super").count();
    let climbed = depth.min(supers);
    if climbed == 0 {
        return path;
    }
    let mut out = path[climbed..].to_vec();
    if climbed == supers && out.first().map(String::as_str) != Some("super") {
        out.insert(0, "self".to_string());
    }
    out
}

/// The `use` statements of `code`: where each is, whether it is public, each path it names
/// and the name it binds.
fn uses(code: &str) -> Vec<(usize, bool, Vec<String>, Option<String>)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("use ").map(|a| a + from) {
        from = at + 4;
        if at > 0 && code[..at].ends_with(is_ident) {
            continue;
        }
        let Some(end) = code[from..].find(';').map(|e| e + from) else {
            break;
        };
        let public = code[..at].trim_end().ends_with("pub");
        let mut paths = Vec::new();
        use_tree(&[], &code[from..end], &mut paths);
        out.extend(paths.into_iter().map(|(p, b)| (at, public, p, b)));
        from = end;
    }
    out
}

/// What each file re-exports (`pub use a::Item`): the item's name and the file defining it.
fn re_exports(
    files: &[SourceFile],
    modules: &BTreeSet<Vec<String>>,
) -> BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> {
    let mut out: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for file in files {
        let code = without_test_items(&file.code);
        for (_, public, path, bind) in uses(&code) {
            let (true, Some(bind)) = (public, bind) else {
                continue;
            };
            let full = absolute(file, &path).or_else(|| {
                // `pub use child::Item` after `mod child;`.
                let mut full = file.module.clone();
                full.extend(path.iter().cloned());
                modules
                    .iter()
                    .any(|m| full.starts_with(m) && m.len() > file.module.len())
                    .then_some(full)
            });
            if let Some((module, false)) = full.as_deref().and_then(|f| file_of(modules, f)) {
                out.entry(file.module.clone())
                    .or_default()
                    .insert(bind, module);
            }
        }
    }
    out
}

/// Each file's module and the file modules its code names.
fn dependencies(files: &[SourceFile]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let exported = re_exports(files, &modules);
    // A path into a module that re-exports its next segment points at the defining file.
    let defining = |full: &[String]| -> Option<(Vec<String>, bool)> {
        let (module, exact) = file_of(&modules, full)?;
        let item = full.get(module.len());
        match item.and_then(|i| exported.get(&module)?.get(i)) {
            Some(definer) if definer != &module => Some((definer.clone(), false)),
            _ => Some((module, exact)),
        }
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in files {
        let name = file.path.file_name().and_then(|n| n.to_str());
        // Tests beside the code, and the binary (whose `crate` is another crate).
        if matches!(name, Some("tests.rs" | "main.rs")) {
            continue;
        }
        let code = without_test_items(&file.code);
        let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut targets: BTreeSet<Vec<String>> = BTreeSet::new();
        let mut add = |full: &[String], names: &mut BTreeMap<String, Vec<String>>, bind| {
            if let Some((module, exact)) = defining(full) {
                if module != file.module {
                    targets.insert(module.clone());
                }
                if let (true, Some(name)) = (exact, bind) {
                    names.insert(name, module);
                }
            }
        };
        for line in code.lines() {
            let trimmed = line.trim_start();
            let visible = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .find_map(|p| trimmed.strip_prefix(p))
                .unwrap_or(trimmed);
            let declared = visible.strip_prefix("mod ");
            if let Some(child) = declared.map(|d| d.trim_end_matches(';').trim()) {
                if child.chars().all(is_ident) && !child.is_empty() {
                    let mut module = file.module.clone();
                    module.push(child.to_string());
                    names.insert(child.to_string(), module);
                }
            }
        }
        let inline = inline_modules(&code);
        for (at, _, path, bind) in uses(&code) {
            let path = from_inline(path, at, &inline);
            if let Some(full) = absolute(file, &path) {
                add(&full, &mut names, bind);
            } else if let Some(module) = path.first().and_then(|p| names.get(p)).cloned() {
                let mut full = module;
                full.extend(path[1..].iter().cloned());
                add(&full, &mut names, bind);
            }
        }
        let bytes = code.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let starts_path = is_ident(bytes[at] as char)
                && (at == 0 || !is_ident(bytes[at - 1] as char))
                && !code[..at].ends_with("::");
            if !starts_path {
                at += 1;
                continue;
            }
            let start = at;
            let path = path_at(&code, at);
            at += path.iter().map(|s| s.len() + 2).sum::<usize>().max(1);
            let path = from_inline(path, start, &inline);
            if path.len() < 2 {
                continue;
            }
            let full = match path[0].as_str() {
                "crate" | "super" | "self" => absolute(file, &path),
                first => names.get(first).map(|module| {
                    let mut full = module.clone();
                    full.extend(path[1..].iter().cloned());
                    full
                }),
            };
            if let Some(full) = full {
                add(&full, &mut names, None);
            }
        }
        edges.insert(file.module.clone(), targets);
    }
    edges
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn cycles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        for w in s.edges.get(v).into_iter().flatten() {
            let Some((w, _)) = s.edges.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[w].min(s.low[v]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w) {
                let low = s.index[w].min(s.low[v]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    state.found
}

fn module_name(module: &[String]) -> String {
    if module.is_empty() {
        "(crate root)".into()
    } else {
        module.join("::")
    }
}

/// Each function item over [`MAX_FN_LINES`] lines whose comments above do not give a reason:
/// (first line, lines, name).
fn long_functions(file: &SourceFile) -> Vec<(usize, usize, String)> {
    let code: Vec<&str> = file.code.lines().collect();
    let text: Vec<&str> = file.text.lines().collect();
    let mut out = Vec::new();
    for (n, line) in code.iter().enumerate() {
        let Some(name) = function_name(line) else {
            continue;
        };
        let mut depth = 0usize;
        let mut opened = false;
        let mut end = None;
        'lines: for (k, body) in code.iter().enumerate().skip(n) {
            for ch in body.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if opened && depth == 0 {
                            end = Some(k);
                            break 'lines;
                        }
                    }
                    ';' if !opened => break 'lines,
                    _ => {}
                }
            }
        }
        let Some(end) = end else { continue };
        let lines = end - n + 1;
        let reason = text[..n]
            .iter()
            .rev()
            .take_while(|l| {
                let t = l.trim_start();
                t.starts_with("//") || t.starts_with("#[")
            })
            .any(|l| l.contains(LONG_FN_REASON));
        if lines > MAX_FN_LINES && !reason {
            out.push((n + 1, lines, name));
        }
    }
    out
}

/// The name of the function a line starts, if it starts one.
fn function_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    if let Some(r) = rest.strip_prefix("pub") {
        rest = r.trim_start();
        if rest.starts_with('(') {
            rest = rest[rest.find(')')? + 1..].trim_start();
        }
    }
    for qualifier in ["const ", "async ", "unsafe ", "extern "] {
        if let Some(r) = rest.strip_prefix(qualifier) {
            rest = r.trim_start();
        }
    }
    let rest = rest.strip_prefix("fn ")?;
    let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
    (!name.is_empty()).then_some(name)
}

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&name))
}

#[test]
fn harness_folders_depend_one_way() {
    let mut wrong: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let files = load_crate("harness");
    let edges = dependencies(&files);
    for file in &files {
        let Some(top) = file.module.first() else {
            continue;
        };
        if matches!(top.as_str(), "main" | "lib") {
            continue;
        }
        let own =
            layer_of(top).unwrap_or_else(|| panic!("{top} ({}) is in no layer", file.display()));
        for used in edges.get(&file.module).into_iter().flatten() {
            let Some(used) = used.first() else { continue };
            let layer = layer_of(used)
                .unwrap_or_else(|| panic!("{} names crate::{used}, in no layer", file.display()));
            let same = used == top;
            let leaf = layer == 0 && own > 0;
            if !same && !leaf && layer >= own {
                wrong
                    .entry(file.display())
                    .or_default()
                    .insert(used.clone());
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "files that use a folder at or above their own layer: {wrong:#?}"
    );
}

#[test]
fn no_file_level_cycles() {
    let mut found = Vec::new();
    for name in CRATES {
        let edges = dependencies(&load_crate(name));
        for component in cycles(&edges) {
            let inside: BTreeSet<&Vec<String>> = component.iter().collect();
            let lines: Vec<String> = component
                .iter()
                .map(|m| {
                    let to: Vec<String> = edges[m]
                        .iter()
                        .filter(|t| inside.contains(t))
                        .map(|t| module_name(t))
                        .collect();
                    format!("  {} -> {}", module_name(m), to.join(", "))
                })
                .collect();
            found.push(format!("{name}:\n{}", lines.join("\n")));
        }
    }
    assert!(
        found.is_empty(),
        "files that name each other's items (move what both need to a file of its own):\n{}",
        found.join("\n")
    );
}

#[test]
fn long_files_and_functions_say_why() {
    let mut long = Vec::new();
    for name in CRATES {
        for file in load_crate(name) {
            let lines = file.text.lines().count();
            if lines > MAX_LINES && !file.text.contains(LONG_FILE_REASON) {
                long.push(format!("{} ({lines} lines)", file.display()));
            }
            for (line, lines, function) in long_functions(&file) {
                long.push(format!(
                    "{}:{line} fn {function} ({lines} lines)",
                    file.display()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these by phase, or say why where they start ({LONG_FILE_REASON} at a file's top, \
         `{LONG_FN_REASON}` in a function's doc comment):\n{}",
        long.join("\n")
    );
}

/// The checks see what they should: a cycle through a `use`d module name, a `super` path, a
/// long function, and nothing inside strings, comments or test modules.
#[test]
fn the_checks_can_fail() {
    let file = |module: &[&str], root: bool, text: &str| SourceFile {
        path: PathBuf::from(if root { "src/a/mod.rs" } else { "src/a/b.rs" }),
        module: module.iter().map(|s| s.to_string()).collect(),
        code: blank_comments_and_literals(text),
        text: text.to_string(),
    };
    let files = [
        file(&["a"], true, "mod b;\nuse crate::c;\nfn f() { b::g(); }\n"),
        file(
            &["a", "b"],
            false,
            "use super::super::d::{self as dee, e::*};\nfn g() { super::f(); }\n",
        ),
        file(
            &["c"],
            false,
            "// crate::a::b\nconst S: &str = \"crate::a\";\n#[cfg(test)]\nmod tests { use crate::a; }\n",
        ),
        file(&["d"], false, "mod inner { fn f() { super::g(); } }\nfn g() {}\n"),
        file(&["d", "e"], false, ""),
    ];
    let edges = dependencies(&files);
    let names = |m: &[&str]| -> BTreeSet<String> {
        let key: Vec<String> = m.iter().map(|s| s.to_string()).collect();
        edges[&key].iter().map(|t| module_name(t)).collect()
    };
    assert_eq!(names(&["a"]), BTreeSet::from(["a::b".into(), "c".into()]));
    assert_eq!(
        names(&["a", "b"]),
        BTreeSet::from(["a".into(), "d".into(), "d::e".into()])
    );
    assert!(names(&["c"]).is_empty());
    // `super` inside an inline module is the file's own module.
    assert!(names(&["d"]).is_empty());
    assert_eq!(cycles(&edges).len(), 1);

    let body = "    x();\n".repeat(MAX_FN_LINES);
    let long = file(
        &["d"],
        false,
        &format!("pub(crate) fn big() {{\n{body}}}\n"),
    );
    assert_eq!(long_functions(&long)[0].2, "big");
    let said = file(
        &["d"],
        false,
        &format!("/// {LONG_FN_REASON} one table.\nfn big() {{\n{body}}}\n"),
    );
    assert!(long_functions(&said).is_empty());
    assert_eq!(
        blank_comments_and_literals("a '{' b r#\"}\"# c // {\n'a"),
        "a     b r      c     \n'a"
    );
    assert!(layer_of("plan") > layer_of("measure"));
}
