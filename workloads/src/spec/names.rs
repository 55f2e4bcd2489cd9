//! Workload and step names, which become parts of folder names, and the line of a file where a
//! name is written.

/// Longest workload or step name.
pub const MAX_NAME_CHARS: usize = 100;

/// Refuses a workload or step name that could act as a path: names become parts of folder
/// names (stores, plots, default results folders), so a name may not be empty, be longer than
/// [`MAX_NAME_CHARS`], hold `/`, `\\` or NUL, or start with `.` (`.`, `..`, hidden folders).
/// Nor may it be blank (spaces alone: a folder `_`, a column that reads empty). Other
/// characters (commas, quotes, spaces, line breaks, other scripts) are allowed: every folder
/// made from a name goes through [`path_component`], and tables escape what they hold.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let chars = name.chars().count();
    let bad = name.chars().find(|c| matches!(c, '/' | '\\' | '\0'));
    let problem = if chars == 0 {
        Some("is empty".to_string())
    } else if name.trim().is_empty() {
        Some("is blank".to_string())
    } else if chars > MAX_NAME_CHARS {
        Some(format!(
            "has {chars} characters, more than {MAX_NAME_CHARS}"
        ))
    } else if let Some(c) = bad {
        Some(format!("holds {c:?}"))
    } else if name.starts_with('.') {
        Some("starts with `.`".to_string())
    } else {
        None
    };
    match problem {
        Some(p) => Err(format!(
            "{what} name {name:?} {p}: a {what} name becomes part of folder names, so it may not \
             be blank, hold `/`, `\\` or NUL, start with `.`, or be longer than {MAX_NAME_CHARS} \
             characters"
        )),
        None => Ok(()),
    }
}

/// `name` as one safe path component: characters other than letters, digits and `-_.@=,+`
/// become `_`, and so does a leading `.`; never empty. For names made of user values (a dataset
/// variant's options) that become folder names.
pub fn path_component(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.@=,+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with('.') || out.is_empty() {
        out.replace_range(..out.chars().next().map_or(0, char::len_utf8), "_");
        if out.is_empty() {
            out.push('_');
        }
    }
    out
}

/// 1-based line of the `nth` (from 0) line mentioning `needle` as a whole word outside a
/// comment, if any: `# decoded, again` is not where the step `decoded` is.
pub(crate) fn nth_line_of(text: &str, needle: &str, nth: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = uncommented(line);
            line.match_indices(needle).any(|(i, _)| {
                let before = line[..i].chars().next_back();
                let after = line[i + needle.len()..].chars().next();
                let word = |c: Option<char>| {
                    c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
                };
                !word(before) && !word(after)
            })
        })
        .nth(nth)
        .map(|(i, _)| i + 1)
}

/// A YAML line without its comment: a `#` at the line's start or after a space, outside
/// quotes, starts one.
fn uncommented(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return &line[..i],
            None => {}
        }
        previous = c;
    }
    line
}

/// 1-based line of the top-level key `key` (`key:` at the start of a line), if any.
pub(crate) fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|i| i + 1)
}
