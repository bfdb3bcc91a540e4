//! The collectives part of a platform: which algorithm each collective
//! runs, what a reduction step costs and what MPICH's shared-memory
//! collectives cost, with its TOML form (the `[collectives]` table of a
//! platform file).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::alg::{alg_names, parse_alg, Alg, Coll};
use super::select::CollAlgs;
use super::{ReduceCost, ShmCost};

/// Algorithms and reduction cost of the collectives.
///
/// ```toml
/// [collectives]
/// selector = "ompi"            # as --coll-selector (default "mpich")
/// reduce_intercept_s = 2e-7    # per reduction step, seconds (default 0)
/// reduce_s_per_byte = 1.5e-10  # γ, seconds per byte (default 0)
/// reduce_min_bytes = 4041      # steps below this size cost nothing (default 0)
/// shm_call_s = 6e-7            # MPICH's release-gather collectives (all three or
/// shm_flag_s = 1.2e-7          # none; without them, point-to-point schedules)
/// shm_s_per_byte = 8e-11
/// [collectives.algorithms]     # optional overrides, as SimGrid's smpi/<collective>
/// allreduce = "rdb"
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "CollectivesToml", into = "CollectivesToml")]
pub struct Collectives {
    /// The selector and its per-collective overrides.
    pub algs: CollAlgs,
    /// Time of each reduction step (the γ term of Thakur, Rabenseifner &
    /// Gropp, IJHPCA 2005); zero (SimGrid's behaviour) by default.
    pub reduce: ReduceCost,
    /// Costs of MPICH's intra-node release-gather collectives
    /// ([`super::shm`]); with the `mpich` selector, an `MPI_Allreduce` or
    /// `MPI_Barrier` on a communicator of one host runs them (from the
    /// 5th call on it) instead of a point-to-point schedule. `None`
    /// (default): never.
    pub shm: Option<ShmCost>,
}

impl Collectives {
    /// The release-gather costs when they apply: set, and the `mpich`
    /// selector (Open MPI and SimGrid have no such algorithms).
    pub fn shm_model(&self) -> Option<&ShmCost> {
        self.shm.as_ref().filter(|_| self.algs.selector == super::Selector::Mpich)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CollectivesToml {
    #[serde(default = "mpich")]
    selector: String,
    #[serde(default)]
    reduce_intercept_s: f64,
    #[serde(default)]
    reduce_s_per_byte: f64,
    #[serde(default)]
    reduce_min_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shm_call_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shm_flag_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shm_s_per_byte: Option<f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    algorithms: BTreeMap<String, String>,
}

fn mpich() -> String {
    "mpich".into()
}

impl TryFrom<CollectivesToml> for Collectives {
    type Error = String;

    fn try_from(t: CollectivesToml) -> Result<Collectives, String> {
        let mut algs = CollAlgs::preset(&t.selector).map_err(|w| format!("collectives.selector: {w}"))?;
        for (coll, alg) in &t.algorithms {
            algs.set(coll, alg).map_err(|w| format!("collectives.algorithms.{coll}: {w}"))?;
        }
        let reduce = ReduceCost { intercept_s: t.reduce_intercept_s, s_per_byte: t.reduce_s_per_byte, min_bytes: t.reduce_min_bytes };
        reduce.validate().map_err(|w| format!("collectives.{w}"))?;
        let shm = match (t.shm_call_s, t.shm_flag_s, t.shm_s_per_byte) {
            (None, None, None) => None,
            (Some(call_s), Some(flag_s), Some(s_per_byte)) => Some(ShmCost { call_s, flag_s, s_per_byte }),
            _ => return Err("collectives: shm_call_s, shm_flag_s and shm_s_per_byte go together (all three or none)".into()),
        };
        if let Some(c) = &shm {
            c.validate().map_err(|w| format!("collectives.{w}"))?;
        }
        Ok(Collectives { algs, reduce, shm })
    }
}

impl From<Collectives> for CollectivesToml {
    fn from(c: Collectives) -> CollectivesToml {
        let algorithms = Coll::ALL.iter().filter_map(|&coll| Some((coll.name().to_string(), alg_name(coll, c.algs.get(coll)?)?))).collect();
        CollectivesToml {
            selector: c.algs.selector.name().into(),
            reduce_intercept_s: c.reduce.intercept_s,
            reduce_s_per_byte: c.reduce.s_per_byte,
            reduce_min_bytes: c.reduce.min_bytes,
            shm_call_s: c.shm.map(|s| s.call_s),
            shm_flag_s: c.shm.map(|s| s.flag_s),
            shm_s_per_byte: c.shm.map(|s| s.s_per_byte),
            algorithms,
        }
    }
}

/// The name [`parse_alg`] reads back as `alg` for `coll` (with
/// `:<segment bytes>` when the segment size is not the name's own), if any.
fn alg_name(coll: Coll, alg: Alg) -> Option<String> {
    let seg = match alg {
        Alg::Pipeline { seg } | Alg::BinaryTree { seg } | Alg::SegmentedRing { seg, .. } => Some(seg),
        _ => None,
    };
    alg_names(coll).iter().find_map(|(name, _)| {
        let plain = (parse_alg(coll, name).ok() == Some(alg)).then(|| name.to_string());
        plain.or_else(|| seg.map(|s| format!("{name}:{s}")).filter(|n| parse_alg(coll, n).ok() == Some(alg)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_round_trip_through_toml() {
        let mut algs = CollAlgs::preset("ompi").unwrap();
        algs.set("allreduce", "rdb").unwrap();
        algs.set("bcast", "ompi_pipeline:8192").unwrap();
        let shm = Some(ShmCost { call_s: 6e-7, flag_s: 1.5e-7, s_per_byte: 9e-11 });
        let c = Collectives { algs, reduce: ReduceCost { intercept_s: 1e-7, s_per_byte: 2e-10, min_bytes: 64 }, shm };
        #[derive(Serialize, Deserialize)]
        struct Wrap {
            collectives: Collectives,
        }
        let text = toml::to_string(&Wrap { collectives: c }).unwrap();
        assert!(text.contains("allreduce = \"rdb\"") && text.contains(":8192"), "{text}");
        let back: Wrap = toml::from_str(&text).unwrap();
        assert_eq!(back.collectives, c);
        let e = toml::from_str::<Wrap>("[collectives]\nalgorithms = { allreduce = \"nope\" }\n").err().unwrap().to_string();
        assert!(e.contains("collectives.algorithms.allreduce") && e.contains("`nope`"), "{e}");
        let e = toml::from_str::<Wrap>("[collectives]\nshm_flag_s = 1e-7\n").err().unwrap().to_string();
        assert!(e.contains("shm_s_per_byte") && e.contains("all three"), "{e}");
        let e = toml::from_str::<Wrap>("[collectives]\nshm_call_s = 0\nshm_flag_s = -1\nshm_s_per_byte = 0\n").err().unwrap().to_string();
        assert!(e.contains("collectives.shm_flag_s"), "{e}");
    }

    #[test]
    fn only_the_mpich_selector_takes_the_shared_memory_model() {
        let shm = Some(ShmCost { call_s: 0.0, flag_s: 1e-7, s_per_byte: 1e-10 });
        let mut c = Collectives { shm, ..Collectives::default() };
        assert!(c.shm_model().is_some());
        c.algs = CollAlgs::preset("ompi").unwrap();
        assert!(c.shm_model().is_none());
    }
}
