//! Topologies of the inter-host network for link sharing: which links a
//! transfer between two hosts crosses ([`super::FlowSharing`]).
//!
//! Every link is full duplex (SimGrid's `SPLITDUPLEX`): undirected link k
//! has directed ids 2k and 2k + 1 (the reverse way). Acknowledgements
//! (`crosstraffic`) take the route from b back to a, as in SimGrid.
//! - **Crossbar** (SimGrid's `FLAT` cluster): host h has one private link
//!   h to a non-blocking switch; a → b crosses 2a (a's up) and 2b + 1 (b's down).
//! - **Backbone** (SimGrid's `FLAT` cluster with `bb_bw`): the crossbar's
//!   private links, numbered from 1, and link 0, the backbone, which every
//!   route between two hosts crosses in both directions on one id (SimGrid's
//!   default `bb_sharing_policy`, `SHARED`): a → b crosses 2(a + 1), 0 and
//!   2(b + 1) + 1.
//! - **Torus** (SimGrid's `TORUS`, `topo_parameters="d0,d1,…"`): hosts are
//!   the torus nodes, numbered with coordinate 0 fastest; node n has one
//!   link per dimension i to its +1 neighbour (wrapping). Routes are
//!   dimension-ordered (0 first), each dimension the shorter way round,
//!   with SimGrid 3.32's tie rule (`TorusZone::get_local_route`: from
//!   coordinate m to t in a dimension of size d, go up iff m < t ≤ m + d/2,
//!   or m > d/2 and (m + d/2) mod d ≥ t). Checked against `smpirun
//!   -replay` of concurrent 1 MB transfers on 4 and 4×2 tori (same times).
//! - **Fat tree** (SimGrid's `FAT_TREE`, `topo_parameters=
//!   "L;down_1,…,down_L;up_1,…,up_L;count_1,…,count_L"`, an extended
//!   generalized fat tree): level-l switches have down_l children, level
//!   l − 1 nodes have up_l parents, joined by count_l parallel links.
//!   Hosts = ∏ down_l. Routes climb to the lowest common ancestor and
//!   come down with SimGrid's `FatTreeZone` port choices (module `fat_tree`).
//!
//! Known gap: some fat-tree cases with acknowledgement traffic differ from
//! `smpirun` (see the README, "Topologies").
//!
//! Latency: with [`super::FlowSharing::latency_per_link`] (SimGrid
//! imports), a route of k links gets k/2 of the model's (two-link)
//! latency, as SimGrid sums link latencies; otherwise every route gets
//! the model's latency.
//! Only transfers that start when both sides have posted go through the
//! links (see `crate::replay`, "Link sharing").

use serde::{Deserialize, Serialize};

mod fat_tree;

/// The network topology between hosts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Topology {
    /// One private link per host to a non-blocking switch.
    #[default]
    Crossbar,
    /// One private link per host to a switch, and one backbone that every
    /// route between two hosts crosses, both directions sharing it.
    Backbone {
        /// The backbone's capacity as a multiple of a private link's
        /// (SimGrid's `bb_bw` ÷ `bw`), > 0.
        ratio: f64,
    },
    /// A torus of `dims` (∏ dims = hosts).
    Torus {
        /// Nodes per dimension, ≥ 1 each.
        dims: Vec<u32>,
    },
    /// An extended generalized fat tree.
    FatTree {
        /// `down[l]`: children of a level-(l+1) switch (≥ 1).
        down: Vec<u32>,
        /// `up[l]`: parents of a level-l node (≥ 1).
        up: Vec<u32>,
        /// `count[l]`: parallel links between a level-l node and each parent (≥ 1).
        count: Vec<u32>,
    },
}

impl Topology {
    /// Parses SimGrid's `topology` and `topo_parameters` attributes.
    ///
    /// # Errors
    /// A message quoting the parameters when they do not parse.
    pub fn from_simgrid(kind: &str, params: &str) -> Result<Topology, crate::error::Invalid> {
        let list = |s: &str| -> Result<Vec<u32>, String> {
            s.split(',')
                .map(|x| x.trim().parse::<u32>().ok().filter(|&v| v > 0))
                .collect::<Option<Vec<u32>>>()
                .ok_or(format!("bad topo_parameters `{params}`"))
        };
        match kind {
            "FLAT" => Ok(Topology::Crossbar),
            "TORUS" => Ok(Topology::Torus { dims: list(params)? }),
            "FAT_TREE" => {
                let parts: Vec<&str> = params.split(';').collect();
                let levels: usize = parts.first().and_then(|l| l.trim().parse().ok()).unwrap_or(0);
                if parts.len() != 4 || levels == 0 {
                    return Err(format!("bad FAT_TREE topo_parameters `{params}` (levels;down…;up…;count…)").into());
                }
                let (down, up, count) = (list(parts[1])?, list(parts[2])?, list(parts[3])?);
                if [down.len(), up.len(), count.len()].iter().any(|&n| n != levels) {
                    return Err(format!("FAT_TREE topo_parameters `{params}`: each list needs {levels} values").into());
                }
                Ok(Topology::FatTree { down, up, count })
            }
            other => Err(format!("topology {other} is not supported (FLAT, TORUS, FAT_TREE)").into()),
        }
    }

    /// Checks the shape against `hosts` hosts.
    ///
    /// # Errors
    /// A message naming the mismatch.
    pub fn validate(&self, hosts: usize) -> Result<(), crate::error::Invalid> {
        let prod = |v: &[u32]| v.iter().map(|&x| x as u64).product::<u64>();
        match self {
            Topology::Crossbar => Ok(()),
            Topology::Backbone { ratio } => {
                if !(ratio.is_finite() && *ratio > 0.0) {
                    return Err(format!("backbone ratio {ratio}: must be a positive number").into());
                }
                Ok(())
            }
            Topology::Torus { dims } => {
                if dims.is_empty() || dims.contains(&0) || prod(dims) != hosts as u64 {
                    return Err(format!("torus dims {dims:?} do not give the {hosts} hosts").into());
                }
                Ok(())
            }
            Topology::FatTree { down, up, count } => {
                let l = down.len();
                if l == 0 || up.len() != l || count.len() != l || [down, up, count].iter().any(|v| v.contains(&0)) {
                    return Err("fat tree: down, up and count need one value >= 1 per level".into());
                }
                if prod(down) != hosts as u64 {
                    return Err(format!("fat tree down {down:?} gives {} hosts, the platform has {hosts}", prod(down)).into());
                }
                Ok(())
            }
        }
    }

    /// Capacity multiplier of each undirected link, in link order; its
    /// length is the number of links (2 directed ids each).
    pub fn link_weights(&self, hosts: usize) -> Vec<f64> {
        match self {
            Topology::Crossbar => vec![1.0; hosts],
            Topology::Backbone { ratio } => std::iter::once(*ratio).chain(std::iter::repeat_n(1.0, hosts)).collect(),
            Topology::Torus { dims } => vec![1.0; hosts * dims.len()],
            Topology::FatTree { down, up, count } => vec![1.0; fat_tree::Shape { down, up, count }.links()],
        }
    }

    /// Appends the directed link ids from host `a` to host `b` (a ≠ b) to `out`.
    pub fn route(&self, a: usize, b: usize, out: &mut Vec<u32>) {
        match self {
            Topology::Crossbar => out.extend([2 * a as u32, 2 * b as u32 + 1]),
            Topology::Backbone { .. } => out.extend([2 * (a as u32 + 1), 0, 2 * (b as u32 + 1) + 1]),
            Topology::Torus { dims } => {
                let nd = dims.len();
                let mut cur = a;
                let mut stride = 1;
                for (i, &d) in dims.iter().enumerate() {
                    let d = d as usize;
                    let (mut c, t) = ((cur / stride) % d, (b / stride) % d);
                    let up = (t > c && t <= c + d / 2) || (c > d / 2 && (c + d / 2) % d >= t);
                    let steps = if up { (t + d - c) % d } else { (c + d - t) % d };
                    for _ in 0..steps {
                        let next = if up { (c + 1) % d } else { (c + d - 1) % d };
                        let node = cur - c * stride + next * stride;
                        // Node n's dimension-i link joins n to its +1 neighbour.
                        out.push(if up { 2 * (cur * nd + i) } else { 2 * (node * nd + i) + 1 } as u32);
                        (c, cur) = (next, node);
                    }
                    stride *= d;
                }
            }
            Topology::FatTree { down, up, count } => fat_tree::Shape { down, up, count }.route(a, b, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(t: &Topology, a: usize, b: usize) -> Vec<u32> {
        let mut v = Vec::new();
        t.route(a, b, &mut v);
        v
    }

    #[test]
    fn torus_routes_go_dimension_order_the_short_way() {
        // 4 x 2 torus: node = x + 4 y; link of (node, dim) = 2 (2 node + dim) (+1 reverse).
        let t = Topology::Torus { dims: vec![4, 2] };
        t.validate(8).unwrap();
        assert_eq!(route(&t, 0, 1), [0]); // x+ from node 0
        assert_eq!(route(&t, 0, 3), [2 * 6 + 1]); // x− wraps: link (3, x) reversed
        assert_eq!(route(&t, 0, 2), [0, 2 * 2]); // tie from 0: up, via node 1
        assert_eq!(route(&t, 2, 0), [2 * 2 + 1, 1]); // tie from 2: down (SimGrid's rule)
        assert_eq!(route(&t, 1, 6), [2 * 2, 2 * 5]); // x+ to 2, then y+ from 2
        assert_eq!(t.link_weights(8).len(), 16);
        assert!(t.validate(9).is_err());
    }

    #[test]
    fn backbone_routes_cross_both_private_links_and_the_one_backbone() {
        let t = Topology::Backbone { ratio: 8.0 };
        t.validate(3).unwrap();
        assert_eq!(t.link_weights(3), [8.0, 1.0, 1.0, 1.0]);
        assert_eq!(route(&t, 0, 2), [2, 0, 7]);
        // The way back shares the backbone's id, not its own direction.
        assert_eq!(route(&t, 2, 0), [6, 0, 3]);
        let toml: Topology = toml::from_str("kind = \"backbone\"\nratio = 8").unwrap();
        assert_eq!(toml, Topology::Backbone { ratio: 8.0 });
        assert!(Topology::Backbone { ratio: 0.0 }.validate(3).is_err());
        assert!(Topology::Backbone { ratio: f64::NAN }.validate(3).is_err());
    }

    #[test]
    fn fat_tree_routes_climb_to_the_common_ancestor() {
        // SimGrid's example "2;4,4;1,2;1,2": 16 hosts, 4 leaf switches with
        // 2 parents each, 2 parallel links per pair.
        let t = Topology::from_simgrid("FAT_TREE", "2;4,4;1,2;1,2").unwrap();
        t.validate(16).unwrap();
        // Links: 16 host links, then 4 leaves x 4 up ports.
        assert_eq!(t.link_weights(16).len(), 32);
        // Same leaf: host up, host down.
        assert_eq!(route(&t, 0, 1), [0, 3]);
        // 0 → 5: leaf 0's up port 5 mod 4 = 1 (link 17), down through leaf 1's
        // port from top switch 1 (link 21), then host 5's link.
        assert_eq!(route(&t, 0, 5), [0, 2 * 17, 2 * 21 + 1, 2 * 5 + 1]);
        // 2 → 9 takes leaf 0's port 9 mod 4 = 1 too: it shares link 17 with
        // 0 → 5; 2 → 6 (port 2) does not.
        assert_eq!(route(&t, 2, 9)[1], 2 * 17);
        assert_ne!(route(&t, 2, 6)[1], 2 * 17);
        assert!(Topology::from_simgrid("FAT_TREE", "2;4,4;1;1,2").is_err());
    }
}
