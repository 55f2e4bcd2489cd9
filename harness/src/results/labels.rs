//! The typed values of a results folder's label columns: the cache state an epoch started from,
//! a verification verdict, a stage's name and kind, what bound an epoch, and the condition
//! (storage profile, consumer) a run was measured under. Each is written and read back here and
//! nowhere else.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use workloads::ConsumerSpec;

/// Serializes a value through its `Display` and deserializes it through its `FromStr`: the
/// label is the one string form of the value.
macro_rules! label_serde {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<str>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Declares a label enum: its variants with their labels, `Display`, `FromStr` (an unknown
/// label is an error listing the known ones) and serde through the label.
macro_rules! label_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $label:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            pub fn label(self) -> &'static str {
                match self {
                    $($name::$variant => $label,)+
                }
            }
        }

        impl fmt::Display for $name {
            /// The label, padded to the formatter's width.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.label())
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(text: &str) -> Result<$name, String> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.label() == text)
                    .ok_or_else(|| {
                        let known: Vec<&str> = $name::ALL.iter().map(|v| v.label()).collect();
                        format!("`{text}` is not a {}; known: {}", stringify!($name), known.join(", "))
                    })
            }
        }

        label_serde!($name);
    };
}

label_enum! {
    /// The page-cache state an epoch started from. Variants are in the order of their labels,
    /// so tables sort the same by either.
    pub enum CacheState {
        /// `--cache app`, served from the application cache.
        App = "app",
        /// `--cache app`, epoch 0: read cold while filling the application cache.
        AppFill = "app-fill",
        /// `--cache app` after epoch 0, but the samples did not fit the cache: read again.
        AppMiss = "app-miss",
        /// The files were evicted (and their residency checked) before the epoch.
        Cold = "cold",
        /// The null-I/O control of a run with a consumer: samples from memory, nothing read.
        NullIo = "null-io",
        /// The files were read beforehand, or left as the previous epoch left them.
        Warm = "warm",
    }
}

impl CacheState {
    /// Whether an epoch in this state is one of a run with an application cache (`--cache
    /// app`: the epoch that fills it, those it serves or misses) rather than of a run through
    /// the page cache: the two are separate runs of a setting, each trial one of each.
    pub fn of_app_cache_run(self) -> bool {
        matches!(
            self,
            CacheState::App | CacheState::AppFill | CacheState::AppMiss
        )
    }
}

label_enum! {
    /// Whether a strategy's output matched fully-online processing.
    pub enum Verdict {
        Fail = "fail",
        Pass = "pass",
    }
}

label_enum! {
    /// What kind of time a stage is: storage (`io`), computation (`cpu`), workers waiting on
    /// the consumer (`wait`) or the consumer waiting on the workers (`consumer`).
    pub enum StageKind {
        Consumer = "consumer",
        Cpu = "cpu",
        Io = "io",
        Wait = "wait",
    }
}

label_enum! {
    /// What bound an epoch, from its stages' shares.
    pub enum Bound {
        ConsumerBound = "consumer-bound",
        CpuBound = "cpu-bound",
        IoBound = "io-bound",
    }
}

label_enum! {
    /// The phase a system sample or a skipped sample belongs to.
    pub enum Phase {
        Offline = "offline",
        Online = "online",
    }
}

impl Phase {
    /// The phase of what happened in online epoch `epoch`, or offline when there is none.
    pub fn of(epoch: Option<u64>) -> Phase {
        match epoch {
            Some(_) => Phase::Online,
            None => Phase::Offline,
        }
    }
}

/// Where an online epoch's time went, one name per stage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StageName {
    /// Reading the shard files (their read calls).
    Read,
    /// Decompression, CRC checks and framing.
    Decompress,
    /// Decoding records into samples.
    Deserialize,
    /// An online step, by its name in the workload (a Python step: inside its callable).
    Step(String),
    /// A Python step's time outside its callable: the sample's way to and from its worker.
    Transfer(String),
    /// Workers blocked on a full queue, waiting for the consumer to take samples
    /// (`workers:blocked`; `wait:consumer` in results from before).
    WorkersBlocked,
    /// The consumer waiting for samples (`consumer:starved`; `consumer:wait` before).
    ConsumerStarved,
}

const STEP_PREFIX: &str = "step:";
const TRANSFER_PREFIX: &str = "transfer:";

impl StageName {
    /// The step's name for [`StageName::Step`].
    pub fn step(&self) -> Option<&str> {
        match self {
            StageName::Step(name) => Some(name),
            _ => None,
        }
    }
}

impl fmt::Display for StageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StageName::Read => f.write_str("read"),
            StageName::Decompress => f.write_str("decompress"),
            StageName::Deserialize => f.write_str("deserialize"),
            StageName::Step(name) => write!(f, "{STEP_PREFIX}{name}"),
            StageName::Transfer(name) => write!(f, "{TRANSFER_PREFIX}{name}"),
            StageName::WorkersBlocked => f.write_str("workers:blocked"),
            StageName::ConsumerStarved => f.write_str("consumer:starved"),
        }
    }
}

impl FromStr for StageName {
    type Err = String;

    fn from_str(text: &str) -> Result<StageName, String> {
        Ok(match text {
            "read" => StageName::Read,
            "decompress" => StageName::Decompress,
            "deserialize" => StageName::Deserialize,
            // The names before: two mirror images that read as one.
            "workers:blocked" | "wait:consumer" => StageName::WorkersBlocked,
            "consumer:starved" | "consumer:wait" => StageName::ConsumerStarved,
            other => match (
                other.strip_prefix(STEP_PREFIX),
                other.strip_prefix(TRANSFER_PREFIX),
            ) {
                (Some(step), _) => StageName::Step(step.to_string()),
                (_, Some(step)) => StageName::Transfer(step.to_string()),
                _ => {
                    return Err(format!(
                        "`{text}` is not a stage; known: read, decompress, deserialize, \
                         step:NAME, transfer:NAME, workers:blocked, consumer:starved"
                    ))
                }
            },
        })
    }
}

label_serde!(StageName);

/// The storage profile every run reads through unless another is emulated.
pub const LOCAL_STORAGE: &str = workloads::storage::LOCAL;

/// The emulated storage profile of a run read under the profile named `storage`; `None` for
/// the local disk as it is.
pub fn emulated_storage(storage: &str) -> Option<&str> {
    (storage != LOCAL_STORAGE).then_some(storage)
}

/// What a run was measured under besides its cell's settings: an emulated storage profile and a
/// simulated consumer. The default (neither) is a plain run. Reports keep each condition apart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Condition {
    /// The emulated storage profile; `None` for the local disk as it is.
    pub storage: Option<String>,
    pub consumer: Option<ConsumerSpec>,
    /// The loader of the online phase; `None` for prepbench's own.
    pub loader: Option<String>,
    /// The memory, in MB, the run and its page cache could use; `None`: the machine's.
    pub memory_mb: Option<u64>,
}

impl Condition {
    pub fn is_plain(&self) -> bool {
        self.storage.is_none()
            && self.consumer.is_none()
            && self.loader.is_none()
            && self.memory_mb.is_none()
    }
}

/// `storage paper-ceph-hdd, consumer 32x100ms-sleep-p2`; empty for a plain run.
impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = [
            self.storage.as_ref().map(|s| format!("storage {s}")),
            self.consumer.map(|c| format!("consumer {c}")),
            self.loader.as_ref().map(|l| format!("loader {l}")),
            self.memory_mb.map(|mb| format!("memory {mb} MB")),
        ];
        f.write_str(&parts.into_iter().flatten().collect::<Vec<_>>().join(", "))
    }
}

impl Serialize for Condition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Eq for Condition {}

/// Plain runs first, then by storage profile, then by consumer label: the order of the written
/// conditions.
impl Ord for Condition {
    fn cmp(&self, other: &Condition) -> Ordering {
        let consumer = |c: &Condition| c.consumer.map(|c| c.to_string());
        self.storage
            .cmp(&other.storage)
            .then_with(|| consumer(self).cmp(&consumer(other)))
            .then_with(|| self.loader.cmp(&other.loader))
            .then_with(|| self.memory_mb.cmp(&other.memory_mb))
    }
}

impl PartialOrd for Condition {
    fn partial_cmp(&self, other: &Condition) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::hash::Hash for Condition {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.storage.hash(state);
        self.consumer.map(|c| c.to_string()).hash(state);
        self.loader.hash(state);
        self.memory_mb.hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_sort_as_their_labels() {
        for state in CacheState::ALL {
            assert_eq!(state.label().parse::<CacheState>().unwrap(), *state);
        }
        let mut labels: Vec<&str> = CacheState::ALL.iter().map(|c| c.label()).collect();
        labels.sort();
        assert_eq!(
            labels,
            CacheState::ALL
                .iter()
                .map(|c| c.label())
                .collect::<Vec<_>>()
        );
        let err = "tepid".parse::<CacheState>().unwrap_err();
        assert!(err.contains("cold") && err.contains("null-io"), "{err}");
        for name in [
            "read",
            "step:resized",
            "step:a:b",
            "consumer:starved",
            "workers:blocked",
        ] {
            assert_eq!(name.parse::<StageName>().unwrap().to_string(), name);
        }
        // Results written before the names changed read as the same stages.
        assert_eq!(
            "wait:consumer".parse::<StageName>().unwrap(),
            StageName::WorkersBlocked
        );
        assert_eq!(
            "consumer:wait".parse::<StageName>().unwrap(),
            StageName::ConsumerStarved
        );
        assert_eq!(
            "step:crop".parse::<StageName>().unwrap().step(),
            Some("crop")
        );
        assert!("reading".parse::<StageName>().is_err());
    }

    #[test]
    fn conditions_print_and_sort_as_their_text() {
        let consumer: ConsumerSpec = "batch=32,compute=100ms".parse().unwrap();
        let conditions = [
            Condition::default(),
            Condition {
                storage: None,
                consumer: Some(consumer),
                loader: None,
                memory_mb: None,
            },
            Condition {
                storage: Some("paper-ceph-hdd".into()),
                consumer: None,
                loader: None,
                memory_mb: None,
            },
            Condition {
                storage: Some("paper-ceph-hdd".into()),
                consumer: Some(consumer),
                loader: None,
                memory_mb: None,
            },
            Condition {
                storage: Some("paper-ceph-hdd".into()),
                consumer: Some(consumer),
                loader: Some("torch".into()),
                memory_mb: None,
            },
            Condition {
                storage: Some("paper-ceph-hdd".into()),
                consumer: Some(consumer),
                loader: Some("torch".into()),
                memory_mb: Some(256),
            },
        ];
        let texts: Vec<String> = conditions.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            texts,
            [
                "",
                "consumer 32x100ms-sleep-p2",
                "storage paper-ceph-hdd",
                "storage paper-ceph-hdd, consumer 32x100ms-sleep-p2",
                "storage paper-ceph-hdd, consumer 32x100ms-sleep-p2, loader torch",
                "storage paper-ceph-hdd, consumer 32x100ms-sleep-p2, loader torch, memory 256 MB"
            ]
        );
        let mut sorted_texts = texts.clone();
        sorted_texts.sort();
        assert_eq!(texts, sorted_texts);
        assert!(conditions.windows(2).all(|w| w[0] < w[1]));
    }
}
