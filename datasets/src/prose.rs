//! English-like prose for generated text datasets: words are the GPT-2 vocabulary's whole-word
//! tokens (` the`, ` of`, ...), drawn with a Zipf law over their BPE rank (earlier merges are
//! more frequent words), arranged in sentences and paragraphs. Nothing is copied from a corpus.

use std::sync::OnceLock;

use workloads::rng::SeededRng;

/// Zipf exponent of word frequencies (close to 1 in English).
const ZIPF_S: f64 = 1.05;
/// Words kept from the vocabulary, most frequent first.
const VOCABULARY_WORDS: usize = 20_000;

struct Vocabulary {
    words: Vec<String>,
    /// Cumulative Zipf weights, for sampling by binary search.
    cumulative: Vec<f64>,
}

/// Short English function words (common knowledge, written here): the vocabulary's short
/// tokens are too often word pieces to be used directly.
const FUNCTION_WORDS: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "is", "it", "that", "for", "on", "was", "with", "as",
    "he", "be", "at", "by", "this", "had", "not", "are", "but", "from", "or", "have", "an", "they",
    "which", "one", "you", "were", "her", "all", "she", "there", "would", "their", "we", "him",
    "been", "has", "when", "who", "will", "more", "no", "if", "out", "so", "said", "what", "up",
    "its", "about", "into", "than", "them", "can", "only", "other", "new", "some", "could", "time",
    "these", "two", "may", "then", "do", "first", "any", "my", "now", "such", "like", "our",
    "over", "man", "me", "even", "most", "made", "after", "also", "did", "many", "before", "must",
    "through", "back", "years", "where", "much", "your", "way", "well", "down", "should",
    "because", "each", "just", "those", "people", "how", "too", "little", "state", "good", "very",
    "make", "world", "still", "own", "see", "men", "work", "long", "get", "here", "between",
    "both", "life", "being", "under", "never", "day", "same", "another", "know", "while", "last",
    "might", "us", "great", "old", "year", "off", "come", "since", "against", "go", "came",
    "right", "used",
];

fn vocabulary() -> &'static Vocabulary {
    static VOCAB: OnceLock<Vocabulary> = OnceLock::new();
    VOCAB.get_or_init(|| {
        let bpe = tiktoken_rs::r50k_base_singleton();
        // Space-prefixed lowercase tokens, in rank order (earlier merges: more frequent).
        let tokens: Vec<String> = (0..50_257u32)
            .filter_map(|id| {
                let bytes = bpe.decode_bytes(&[id]).ok()?;
                let word = std::str::from_utf8(&bytes)
                    .ok()?
                    .strip_prefix(' ')?
                    .to_string();
                (!word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase())).then_some(word)
            })
            .collect();
        let known: std::collections::HashSet<&str> = tokens.iter().map(String::as_str).collect();
        // A longer token is a word when the vocabulary also holds an inflection of it (" show"
        // -> " shows"); word pieces (" differe", " academ") have none.
        let inflected = |w: &str| {
            ["s", "es", "ed", "d", "ing", "er", "ly"]
                .iter()
                .any(|end| known.contains(format!("{w}{end}").as_str()))
        };
        let words: Vec<String> = tokens
            .iter()
            .filter(|w| FUNCTION_WORDS.contains(&w.as_str()) || (w.len() >= 4 && inflected(w)))
            .take(VOCABULARY_WORDS)
            .cloned()
            .collect();
        let mut total = 0.0;
        let cumulative = (0..words.len())
            .map(|r| {
                total += 1.0 / ((r + 1) as f64).powf(ZIPF_S);
                total
            })
            .collect();
        Vocabulary { words, cumulative }
    })
}

/// One word, Zipf-distributed.
pub fn word(rng: &mut SeededRng) -> &'static str {
    let v = vocabulary();
    let target = rng.unit_f64() * v.cumulative.last().copied().unwrap_or(1.0);
    let i = v
        .cumulative
        .partition_point(|c| *c < target)
        .min(v.words.len() - 1);
    &v.words[i]
}

fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// Words in a sentence: 6 to 28.
fn sentence_length(rng: &mut SeededRng) -> usize {
    6 + rng.below(23) as usize
}

/// What goes before word `i` (from 1) of a sentence of `n`: a space, now and then after a
/// comma away from the sentence's ends.
fn separator(out: &mut String, i: usize, n: usize, rng: &mut SeededRng) {
    if i > 2 && i < n - 2 && rng.below(9) == 0 {
        out.push(',');
    }
    out.push(' ');
}

/// How a sentence ends: mostly a full stop, now and then a question or an exclamation.
fn end_mark(rng: &mut SeededRng) -> char {
    match rng.below(12) {
        0 => '?',
        1 => '!',
        _ => '.',
    }
}

/// Sentences in a paragraph: 2 to 7.
fn paragraph_length(rng: &mut SeededRng) -> usize {
    2 + rng.below(6) as usize
}

/// A sentence of 6 to 28 words with occasional commas, capitalised, ending in punctuation.
pub fn sentence(rng: &mut SeededRng) -> String {
    let n = sentence_length(rng);
    let mut out = capitalised(word(rng));
    for i in 1..n {
        separator(&mut out, i, n, rng);
        out.push_str(word(rng));
    }
    out.push(end_mark(rng));
    out
}

/// A paragraph of `2..=7` sentences.
pub fn paragraph(rng: &mut SeededRng) -> String {
    let n = paragraph_length(rng);
    (0..n).map(|_| sentence(rng)).collect::<Vec<_>>().join(" ")
}

/// Share of an article's word positions that start a phrase repeated from earlier in it.
const REPEAT: f64 = 0.20;

/// The words an article has used so far: real articles repeat their names and phrases ("the
/// city council", "said on Tuesday"), which is most of what DEFLATE finds in text beyond the
/// words' frequencies. Drawn word by word from a Zipf law alone, extracted text shrank 54 %
/// under GZIP and its BPE ids 58 %, where OpenWebText's do 61 % and 65 % (the paper's
/// compression table); with a fifth of positions repeating a phrase, 62 % and 65 %.
#[derive(Default)]
pub struct Article {
    words: Vec<&'static str>,
}

impl Article {
    /// The next `n` words: fresh Zipf words, and with probability [`REPEAT`] at each position
    /// a phrase of 2 to 5 words the article already used.
    fn words(&mut self, rng: &mut SeededRng, n: usize) -> Vec<&'static str> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if self.words.len() >= 20 && rng.unit_f64() < REPEAT {
                let len = (2 + rng.below(4) as usize).min(n - out.len());
                let from = rng.below((self.words.len() - len) as u64) as usize;
                let phrase: Vec<&'static str> = self.words[from..from + len].to_vec();
                out.extend_from_slice(&phrase);
                self.words.extend(phrase);
            } else {
                let w = word(rng);
                out.push(w);
                self.words.push(w);
            }
        }
        out
    }

    /// A sentence as [`sentence`] writes them, from [`Article::words`] (drawn before its
    /// commas, where [`sentence`] draws each word after the comma before it).
    pub fn sentence(&mut self, rng: &mut SeededRng) -> String {
        let n = sentence_length(rng);
        let words = self.words(rng, n);
        let mut out = capitalised(words[0]);
        for (i, w) in words.iter().enumerate().skip(1) {
            separator(&mut out, i, n, rng);
            out.push_str(w);
        }
        out.push(end_mark(rng));
        out
    }

    /// A paragraph of `2..=7` of the article's sentences.
    pub fn paragraph(&mut self, rng: &mut SeededRng) -> String {
        let n = paragraph_length(rng);
        (0..n)
            .map(|_| self.sentence(rng))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A title of 3 to 9 capitalised words.
pub fn title(rng: &mut SeededRng) -> String {
    let n = 3 + rng.below(7) as usize;
    (0..n)
        .map(|_| capitalised(word(rng)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_zipf_and_come_from_the_vocabulary() {
        let v = vocabulary();
        assert!(v.words.len() > 3_000, "{} words", v.words.len());
        assert!(
            v.words[..200].iter().any(|w| w == "the"),
            "frequent words first"
        );
        let mut rng = SeededRng::new(1);
        let draws: Vec<&str> = (0..20_000).map(|_| word(&mut rng)).collect();
        let top = draws.iter().filter(|w| **w == v.words[0]).count();
        let tenth = draws.iter().filter(|w| **w == v.words[9]).count();
        // Zipf: the most frequent word about 10^1.05 = 11x the tenth.
        assert!(top > 5 * tenth.max(1), "{top} vs {tenth}");
        let s = sentence(&mut SeededRng::new(2));
        assert!(
            s.chars().next().unwrap().is_uppercase() && ".?!".contains(s.chars().last().unwrap()),
            "{s}"
        );
    }
}
