//! Names shared by workload files and the CLI: record codecs (`none`, `gzip[:level]`,
//! `zlib[:level]`, `zstd[:level]`, `lz4`) and cache modes (`cold`, `warm`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a shard stream is compressed. Levels are validated on parsing. Codecs order by name,
/// then level; they are written and read as `name[:level]` (`zstd:3`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Codec {
    #[default]
    None,
    Gzip {
        level: u32,
    },
    Zlib {
        level: u32,
    },
    Zstd {
        level: i32,
    },
    Lz4,
}

pub const CODEC_NAMES: &str = "none, gzip[:0-9], zlib[:0-9], zstd[:1-22], lz4";

impl Codec {
    /// The file-name suffix of a shard written with this codec.
    pub fn extension(self) -> &'static str {
        match self {
            Codec::None => "",
            Codec::Gzip { .. } => ".gz",
            Codec::Zlib { .. } => ".zz",
            Codec::Zstd { .. } => ".zst",
            Codec::Lz4 => ".lz4",
        }
    }
}

impl Codec {
    /// The codec's name without its level.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip { .. } => "gzip",
            Codec::Zlib { .. } => "zlib",
            Codec::Zstd { .. } => "zstd",
            Codec::Lz4 => "lz4",
        }
    }

    /// The compression level, for codecs that have one.
    pub fn level(self) -> Option<i64> {
        match self {
            Codec::Gzip { level } | Codec::Zlib { level } => Some(level.into()),
            Codec::Zstd { level } => Some(level.into()),
            Codec::None | Codec::Lz4 => None,
        }
    }
}

impl Ord for Codec {
    fn cmp(&self, other: &Codec) -> std::cmp::Ordering {
        (self.name(), self.level()).cmp(&(other.name(), other.level()))
    }
}

impl PartialOrd for Codec {
    fn partial_cmp(&self, other: &Codec) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl serde::Serialize for Codec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Codec {
    /// The codec as a folder name holds it: its text without `:` (`gzip6`, `zstd3`, `lz4`).
    pub fn folder_name(self) -> String {
        self.to_string().replace(':', "")
    }

    /// The codec a folder name holds ([`Codec::folder_name`]); `None` for no codec's.
    pub fn from_folder_name(name: &str) -> Option<Codec> {
        if let Ok(codec) = name.parse() {
            return Some(codec);
        }
        let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
        let (base, level) = name.split_at(name.len() - digits);
        format!("{base}:{level}").parse().ok()
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Codec::None => f.write_str("none"),
            Codec::Gzip { level } => write!(f, "gzip:{level}"),
            Codec::Zlib { level } => write!(f, "zlib:{level}"),
            Codec::Zstd { level } => write!(f, "zstd:{level}"),
            Codec::Lz4 => f.write_str("lz4"),
        }
    }
}

impl FromStr for Codec {
    type Err = String;

    fn from_str(text: &str) -> Result<Codec, String> {
        let (name, level) = match text.split_once(':') {
            Some((n, l)) => (n, Some(l)),
            None => (text, None),
        };
        let parse_level =
            |range: std::ops::RangeInclusive<i64>, default: i64| -> Result<i64, String> {
                match level {
                    None => Ok(default),
                    Some(l) => l
                        .parse::<i64>()
                        .ok()
                        .filter(|v| range.contains(v))
                        .ok_or_else(|| {
                            format!("codec `{text}`: level must be an integer in {range:?}")
                        }),
                }
            };
        let no_level = |codec: Codec| match level {
            None => Ok(codec),
            Some(_) => Err(format!("codec `{name}` takes no level")),
        };
        match name {
            "none" => no_level(Codec::None),
            "lz4" => no_level(Codec::Lz4),
            "gzip" => Ok(Codec::Gzip {
                level: parse_level(0..=9, 6)? as u32,
            }),
            "zlib" => Ok(Codec::Zlib {
                level: parse_level(0..=9, 6)? as u32,
            }),
            "zstd" => Ok(Codec::Zstd {
                level: parse_level(1..=22, 3)? as i32,
            }),
            _ => Err(format!(
                "unknown codec `{text}`{}; allowed: {CODEC_NAMES}",
                crate::suggest::did_you_mean(name, ["none", "lz4", "gzip", "zlib", "zstd"])
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Codec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Codec, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The page-cache state an epoch starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// The strategy's files are evicted (and their residency verified) before the epoch.
    Cold,
    /// The files are read once beforehand, or left as the previous epoch left them.
    Warm,
    /// Epoch 0 starts cold and keeps every deserialized sample in memory (up to a limit);
    /// later epochs are served from there, as tf.data's `cache()` does.
    App,
}

impl CacheMode {
    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Cold => "cold",
            CacheMode::Warm => "warm",
            CacheMode::App => "app",
        }
    }
}

impl fmt::Display for CacheMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CacheMode {
    type Err = String;

    fn from_str(text: &str) -> Result<CacheMode, String> {
        match text {
            "cold" => Ok(CacheMode::Cold),
            "warm" => Ok(CacheMode::Warm),
            "app" => Ok(CacheMode::App),
            _ => Err(format!(
                "unknown cache mode `{text}`; allowed: cold, warm, app"
            )),
        }
    }
}

/// What a run does with a sample it cannot read or process: stop with the error naming the file
/// (`fail`, the default) or record it (runs.csv `skipped_samples`, errors.csv) and go on (`skip`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnError {
    #[default]
    Fail,
    Skip,
}

impl fmt::Display for OnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OnError::Fail => "fail",
            OnError::Skip => "skip",
        })
    }
}

impl FromStr for OnError {
    type Err = String;

    fn from_str(text: &str) -> Result<OnError, String> {
        match text {
            "fail" => Ok(OnError::Fail),
            "skip" => Ok(OnError::Skip),
            _ => Err(format!("unknown value `{text}`; allowed: fail, skip")),
        }
    }
}

impl Serialize for OnError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for OnError {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OnError, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn codecs_round_trip_through_folder_names() {
        for text in ["none", "lz4", "gzip:6", "zlib:1", "zstd:22", "zstd:3"] {
            let codec: Codec = text.parse().unwrap();
            assert_eq!(
                Codec::from_folder_name(&codec.folder_name()),
                Some(codec),
                "{text}"
            );
        }
        assert_eq!(
            Codec::from_folder_name("gzip6"),
            Some(Codec::Gzip { level: 6 })
        );
        assert_eq!(Codec::from_folder_name("brotli3"), None);
    }

    use super::*;

    #[test]
    fn codecs_parse_with_default_and_explicit_levels() {
        assert_eq!("none".parse::<Codec>().unwrap(), Codec::None);
        assert_eq!("gzip".parse::<Codec>().unwrap(), Codec::Gzip { level: 6 });
        assert_eq!("zlib:9".parse::<Codec>().unwrap(), Codec::Zlib { level: 9 });
        assert_eq!("zstd".parse::<Codec>().unwrap(), Codec::Zstd { level: 3 });
        assert_eq!(
            "zstd:19".parse::<Codec>().unwrap(),
            Codec::Zstd { level: 19 }
        );
        assert_eq!("lz4".parse::<Codec>().unwrap(), Codec::Lz4);
        for c in ["none", "gzip:1", "zlib:6", "zstd:22", "lz4"] {
            assert_eq!(c.parse::<Codec>().unwrap().to_string(), c);
        }
    }

    #[test]
    fn bad_codecs_say_what_is_allowed() {
        assert!("snappy".parse::<Codec>().unwrap_err().contains("allowed"));
        assert!("zstd:99".parse::<Codec>().unwrap_err().contains("1..=22"));
        assert!("gzip:x".parse::<Codec>().unwrap_err().contains("level"));
        assert!("lz4:3".parse::<Codec>().unwrap_err().contains("no level"));
    }
}
