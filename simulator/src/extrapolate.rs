//! Trace extrapolation: the run of a program at N ranks, made from traces
//! of the same program at a few smaller rank counts (Wu & Mueller,
//! "ScalaExtrap: Trace-Based Communication Extrapolation for SPMD
//! Programs", PPoPP 2011; the step from the scale one can run to the
//! scale one wants that HPX-5's ghost nodes also take, Sterling et al.).
//!
//! - **Rank classes.** Ranks whose calls are the same sequence (operation
//!   and call site, call by call) form a class. A class is named by a rule
//!   that holds at every traced rank count: rank c, rank N − 1 − c, or
//!   "every other rank". A rank of the target count belongs to the class
//!   its rule gives. Calls to `MPI_PROC_NULL` are in the trace, so the
//!   edge ranks of a stencil share the interior's sequence; only their
//!   peers differ.
//! - **Peers** (destinations, sources, roots) are functions of the rank r
//!   and N ([`rules::PeerRule`]): fixed ranks, r + d with
//!   `MPI_PROC_NULL` outside, (r + d) mod N, neighbours on the 2-D grid of
//!   `MPI_Dims_create(N, 2)`, member k of the communicator. New
//!   communicators' members likewise ([`rules::MemberRule`]: the world,
//!   grid rows and columns, blocks, strides).
//! - **Sizes** are fitted per call against N or a side of the grid
//!   ([`fit::fit_size`]); v- and w-collectives' count vectors get a rule
//!   of the communicator's size (module `vectors`); **compute blocks** per
//!   class and call-site region against N or a side of the grid, by
//!   Akaike's criterion with the traced runs' own noise
//!   ([`fit::fit_noisy`]), several traced runs of one count taken at
//!   their median block by block. Each block of a target rank is its
//!   class member's, split into what the members share, the member's
//!   level and a transient part drawn from the traced distribution
//!   (module `blocks`), scaled by the region's law.
//!
//! What does not fit (a peer no rule gives, sizes that differ between the
//! ranks of a class, ranks that behave in more ways than the rules name)
//! is refused with the call site. The model's streams are generated
//! rank by rank, call by call; nothing per target rank is stored.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::action::ActionStream;
use crate::action::RecordConverter;
use crate::trace::record::{CallRecord, Op, Params};
use crate::trace::region_id;
use crate::trace::symbols::Symbolizer;
use crate::trace::{self, CallSite, Module, RankHeader, TraceError, TraceMeta};

mod blocks;
mod fields;
pub mod fit;
pub mod grid;
pub mod loops;
mod records;
pub mod rules;
mod runs;
mod vectors;

pub use records::RankRecords;

use fields::Fields;
use fit::Law;
use grid::{Layout, Member};
use rules::{MemberRule, PeerRule, PeerSeen};

thread_local! {
    /// The record a generated stream writes its next call into
    /// ([`records::RankRecords::next_into`]) before converting it: one
    /// per thread rather than one per rank.
    static SCRATCH: std::cell::RefCell<CallRecord> = const { std::cell::RefCell::new(CallRecord::bare(Op::Init, Params::None)) };
}

/// Why a model cannot be built or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtrapolateError {
    /// A trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// Writing the extrapolated trace failed.
    #[error("{path}: {source}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The traces cannot make a model: fewer than two rank counts, two
    /// traces of one count, or traces of different programs.
    #[error("{0}")]
    Samples(String),
    /// The program's behaviour does not follow a rule the model knows, at
    /// the call site named.
    #[error("cannot extrapolate {call} at {site}: {why}")]
    Irregular {
        /// The MPI call.
        call: &'static str,
        /// Its call site (module+offset).
        site: String,
        /// What does not fit.
        why: String,
    },
}

/// The traced run of one rank count, read into memory.
#[derive(Debug)]
pub struct Sample {
    /// Trace directory.
    pub dir: PathBuf,
    /// Its metadata.
    pub meta: TraceMeta,
    /// Per rank: header, modules, and the call records with their sites.
    ranks: Vec<RankSample>,
}

/// One rank of a [`Sample`]: header, modules, and records with their sites.
type RankSample = (RankHeader, Vec<Module>, Vec<(CallRecord, CallSite)>);

impl Sample {
    /// Reads every rank of the trace directory `dir`.
    ///
    /// # Errors
    /// [`ExtrapolateError::Trace`] naming the file at fault.
    pub fn open(dir: &Path) -> Result<Sample, ExtrapolateError> {
        let (meta, traces) = trace::open_dir(dir)?;
        let mut ranks = Vec::with_capacity(traces.len());
        for t in traces {
            let mut recs = Vec::new();
            for r in t.records()? {
                let r = r?;
                let site = t.call_site(r.caller);
                recs.push((r, site));
            }
            ranks.push((t.header.clone(), t.modules.clone(), recs));
        }
        Ok(Sample { dir: dir.to_path_buf(), meta, ranks })
    }

    fn n(&self) -> u32 {
        self.ranks.len() as u32
    }
}

/// Which target ranks a class holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassRule {
    /// Rank c.
    Rank(u32),
    /// Rank N − 1 − c.
    FromEnd(u32),
    /// Every rank no other class names.
    Rest,
    /// The ranks at one position on a process grid (module [`grid`]):
    /// used when the ranks behave in more ways than first, last and the
    /// rest, and the grid's positions separate them.
    Position(grid::Position),
}

impl std::fmt::Display for ClassRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClassRule::Rank(c) => write!(f, "rank {c}"),
            ClassRule::FromEnd(c) => write!(f, "rank N-1-{c}"),
            ClassRule::Rest => write!(f, "the rest"),
            ClassRule::Position(p) => write!(f, "{p}"),
        }
    }
}

impl ClassRule {
    fn holds(self, r: u32, n: u32) -> bool {
        match self {
            ClassRule::Rank(c) => r == c,
            ClassRule::FromEnd(c) => c < n && r == n - 1 - c,
            ClassRule::Rest => true,
            ClassRule::Position(p) => p.layout.position(r, n) == p,
        }
    }
}

/// One call of a class's sequence, as the target generates it.
#[derive(Debug)]
struct Slot {
    /// The template rank's record (handles, tags, communicator ids).
    rec: CallRecord,
    /// Its call-site region id (the previous call's site and its own).
    region: u64,
    peers: [Option<PeerRule>; 2],
    sizes: [Option<Law>; 2],
    members: Option<MemberRule>,
    /// A v- or w-collective's send and receive count vectors.
    vecs: [Option<vectors::VecRule>; 2],
    /// Index of its region's compute law in [`Class::laws`].
    law: usize,
}

/// Ranks that make the same calls.
#[derive(Debug)]
pub struct Class {
    /// Which ranks.
    pub rule: ClassRule,
    slots: Vec<Slot>,
    /// Compute blocks of the class's ranks in the largest run, call by
    /// call: a target rank keeps the level of its member (its own rank
    /// when the class had it, else rank r mod their number) and draws the
    /// transient part of each block (module `blocks`).
    blocks: blocks::Blocks,
    /// Compute-block laws per call-site region.
    pub laws: Vec<RegionLaw>,
    /// Its loops whose trip counts change with N, if any (module `loops`).
    loops: Option<loops::Loops>,
}

/// How one region's compute blocks scale.
#[derive(Debug, Clone)]
pub struct RegionLaw {
    /// The region: the call sites before and after its blocks.
    pub region: String,
    /// Mean CPU time of its blocks in the class, seconds, per traced rank count.
    pub points: Vec<(u32, f64)>,
    /// The same with their noise, as the law was fitted to them.
    pub noisy: Vec<fit::Noisy>,
    /// Blocks per rank of the class in the region (calls that end one).
    pub blocks: usize,
    /// The law fitted to them.
    pub law: Law,
}

/// One prediction of an extrapolated run: where it sits in the band.
///
/// The prediction itself is [`Variant::PREDICTION`]; the band is made of
/// other seeds of the draws (the program's variability met another way)
/// and of the compute laws moved to their intervals' edges
/// ([`band_variants`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Variant {
    /// How far every compute block is moved towards an edge of its
    /// region law's 95 % interval at N ([`fit::interval`]): 0, the law
    /// itself; −1 and +1, the lower and the upper edge.
    pub sigma: f64,
    /// `Some(seed)`: each block's transient part drawn from its region's
    /// pool with this seed (module `blocks`); `None`: each target rank copies
    /// the blocks of its template member (the traced rank of that number
    /// when the class had it, else member r mod M of the M), so the
    /// waiting of M ranks repeats at N.
    pub draw: Option<u64>,
}

impl Variant {
    /// The prediction: the laws as fitted, draws of the default seed.
    pub const PREDICTION: Variant = Variant { sigma: 0.0, draw: Some(blocks::SEED) };
    /// The prediction with the template members' blocks copied.
    pub const CLONE_TEMPLATE: Variant = Variant { sigma: 0.0, draw: None };
}

pub use blocks::Noise;

/// Draws of the program's variability a band is made of by default.
pub const DEFAULT_DRAWS: u32 = 5;

/// The factor `sigma` moves a law fitted to `noisy` by at `n` ranks: 1 at
/// 0, towards its interval's lower edge below 0 and its upper edge above
/// ([`fit::interval`]).
fn edge(noisy: &[fit::Noisy], n: u32, sigma: f64) -> f64 {
    if sigma == 0.0 {
        return 1.0;
    }
    let (lo, hi) = fit::interval(noisy, n);
    1.0 + sigma.abs() * (if sigma < 0.0 { lo } else { hi } - 1.0)
}

/// The variants whose replays make a prediction and its band: the
/// prediction first ([`Variant::PREDICTION`]), then `draws − 1` other
/// seeds of the draws, then the laws at the lower and at the upper edge
/// of their intervals (with the prediction's draws). With `clone`, the
/// template members' blocks are copied instead of drawn, and the band is
/// the laws' alone.
pub fn band_variants(draws: u32, clone: bool) -> Vec<Variant> {
    let base = if clone { Variant::CLONE_TEMPLATE } else { Variant::PREDICTION };
    let mut v = vec![base];
    if !clone {
        v.extend(
            (1..draws.max(1) as u64)
                .map(|k| Variant { draw: Some(blocks::SEED.wrapping_add(k.wrapping_mul(0x9e37_79b9_7f4a_7c15))), ..base }),
        );
    }
    v.push(Variant { sigma: -1.0, ..base });
    v.push(Variant { sigma: 1.0, ..base });
    v
}

/// A prediction's band from the makespans of [`band_variants`]' replays,
/// in that order, seconds: the draws' range, widened below and above by
/// how far the laws' interval edges move the prediction.
///
/// # Panics
/// With fewer than three makespans.
pub fn band_of(makespans: &[f64]) -> (f64, f64) {
    let (draws, laws) = makespans.split_at(makespans.len() - 2);
    let mid = draws[0];
    let (lo, hi) = draws.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let below = laws.iter().map(|t| mid - t).fold(0.0, f64::max);
    let above = laws.iter().map(|t| t - mid).fold(0.0, f64::max);
    (lo - below, hi + above)
}

/// An extrapolation model built from [`Sample`]s.
#[derive(Debug)]
pub struct Model {
    /// Classes, explicit rules first, [`ClassRule::Rest`] last.
    pub classes: Vec<Class>,
    /// Rank counts of the samples, increasing.
    pub sample_ranks: Vec<u32>,
    /// The largest sample's rank count (the templates' run).
    template_n: u32,
    meta: TraceMeta,
    header: RankHeader,
    modules: Vec<Module>,
}

fn irregular(rec: &CallRecord, site: &CallSite, why: String) -> ExtrapolateError {
    ExtrapolateError::Irregular { call: rec.op.mpi_name(), site: site.to_string(), why }
}

impl Model {
    /// Builds the model of `samples` (traces of one program at two or more
    /// rank counts; in any order). Several traced runs of one count are
    /// merged first, each compute block at the median of its runs, so run-to-run noise does not enter the laws.
    ///
    /// # Errors
    /// [`ExtrapolateError::Samples`] for unusable sample sets (one rank
    /// count, or runs of one count that call differently),
    /// [`ExtrapolateError::Irregular`] naming the first call site whose
    /// behaviour no rule describes.
    pub fn build(samples: Vec<Sample>) -> Result<Model, ExtrapolateError> {
        let samples = runs::merge_runs(samples)?;
        let counts: Vec<u32> = samples.iter().map(Sample::n).collect();
        if counts.len() < 2 {
            return Err(ExtrapolateError::Samples(format!(
                "extrapolation needs traces at two or more different rank counts, got {counts:?}"
            )));
        }
        // Shapes: the (op, site) sequence of each rank, interned.
        let mut shapes: HashMap<Vec<(Op, CallSite)>, usize> = HashMap::new();
        let mut shape_of: Vec<Vec<usize>> = Vec::new();
        for s in &samples {
            let ids = s
                .ranks
                .iter()
                .map(|(_, _, recs)| {
                    let key: Vec<(Op, CallSite)> = recs.iter().map(|(r, site)| (r.op, site.clone())).collect();
                    let next = shapes.len();
                    *shapes.entry(key).or_insert(next)
                })
                .collect();
            shape_of.push(ids);
        }
        type Made = Vec<(ClassRule, Vec<Member>, Option<loops::Folding>)>;
        let (rules, layout): (Made, Option<Layout>) = match class_rules(&samples, &shape_of, shapes.len()) {
            Ok(rules) => (rules.into_iter().map(|(shape, rule)| (rule, members_of(&samples, &shape_of, shape), None)).collect(), None),
            Err(e) => {
                // More behaviours than rank rules name: loops whose trip
                // count changes with N, else grid positions, if a process
                // grid separates them.
                match loops::classes(&samples) {
                    Some(Ok(made)) => (made.into_iter().map(|(rule, members, f)| (rule, members, Some(f))).collect(), None),
                    folded => {
                        let by_grid = grid::choose(&samples, &shape_of).map(|layout| (layout, grid::classes(&samples, layout)));
                        match (by_grid, folded.and_then(Result::err)) {
                            (Some((layout, Ok(made))), _) => (
                                made.into_iter().map(|(p, members)| (ClassRule::Position(p), members, None)).collect::<Vec<_>>(),
                                Some(layout),
                            ),
                            (_, Some(refused)) => return Err(refused),
                            (Some((_, Err(refusal))), None) => {
                                let (k, r, i) = refusal.call;
                                let (rec, site) = &samples[k].ranks[r as usize].2[i as usize];
                                return Err(irregular(rec, site, refusal.why));
                            }
                            (None, None) => return Err(e),
                        }
                    }
                }
            }
        };
        let big = samples.len() - 1;
        let template_n = counts[big];
        let mut classes = Vec::new();
        let mut symbols = Symbolizer::new();
        for (rule, members, folding) in rules {
            classes.push(build_class(&samples, &members, rule, layout, folding, &mut symbols)?);
        }
        classes.sort_by_key(|c| c.rule == ClassRule::Rest);
        let (header, modules, _) = &samples[big].ranks[0];
        Ok(Model {
            classes,
            sample_ranks: counts,
            template_n,
            meta: samples[big].meta.clone(),
            header: header.clone(),
            modules: modules.clone(),
        })
    }

    fn class_of(&self, r: u32, n: u32) -> Option<&Class> {
        self.classes.iter().find(|c| c.rule.holds(r, n))
    }

    /// Whether every rank of `n` has a class: always with rank rules
    /// (the rest take the last); with grid positions, each rank's
    /// position must be one the traces have or make (a side of one rank,
    /// for one, is only where a traced count had it).
    ///
    /// # Errors
    /// [`ExtrapolateError::Samples`] naming the first rank without a class
    /// and its position.
    pub fn covers(&self, n: u32) -> Result<(), ExtrapolateError> {
        match (0..n).find(|&r| self.class_of(r, n).is_none()) {
            None => Ok(()),
            Some(r) => {
                let at = match self.classes.iter().find_map(|c| match c.rule {
                    ClassRule::Position(p) => Some(p.layout.position(r, n).to_string()),
                    _ => None,
                }) {
                    Some(p) => p,
                    None => "its position".into(),
                };
                Err(ExtrapolateError::Samples(format!(
                    "cannot extrapolate to {n} ranks: rank {r} is at {at}, where no traced rank was and which the traced positions do not make (traced {:?})",
                    self.sample_ranks
                )))
            }
        }
    }

    /// The call records of rank `rank` of `n`, generated call by call
    /// (the prediction, [`Variant::PREDICTION`]).
    pub fn records(&self, rank: u32, n: u32) -> RankRecords<'_> {
        self.records_as(rank, n, Variant::PREDICTION)
    }

    /// [`Model::records`] of one variant of the prediction: compute moved
    /// along its laws' intervals, transient parts drawn with another seed
    /// or copied from the template members.
    ///
    /// # Panics
    /// When rank `rank` of `n` has no class ([`Model::covers`]).
    pub fn records_as(&self, rank: u32, n: u32, variant: Variant) -> RankRecords<'_> {
        let class = self.class_of(rank, n).unwrap_or_else(|| panic!("{}", self.covers(n).err().map(|e| e.to_string()).unwrap_or_default()));
        self.records_with(class, self.at_n(class, n, variant), rank, n)
    }

    /// What every rank of `class` shares at `n` ranks: the compute scale
    /// of each region law, moved towards its interval's edges by
    /// `variant.sigma`, the draws' seed, and each slot's message sizes.
    fn at_n(&self, class: &Class, n: u32, variant: Variant) -> Arc<records::AtN> {
        let factors = class
            .laws
            .iter()
            .map(|RegionLaw { law: l, noisy, .. }| {
                let at = l.eval(self.template_n);
                let f = if at > 0.0 { l.eval(n) / at } else { 1.0 };
                (f * edge(noisy, n, variant.sigma)).max(0.0)
            })
            .collect();
        let sizes = class.slots.iter().map(|slot| slot.sizes.each_ref().map(|l| l.as_ref().map(|l| l.eval(n).round() as u64))).collect();
        let plan = class.loops.as_ref().map(|l| l.plan(class.slots.len(), n).into_boxed_slice());
        Arc::new(records::AtN { factors, sizes, draw: variant.draw, plan })
    }

    /// A warning when `n` is far beyond the traced counts: more than 16
    /// times the largest, or where a region law's 95 % interval at `n`
    /// ([`fit::interval`]) moves its class's compute by more than 2 %. It
    /// names the law that moves it most.
    pub fn far_from_data(&self, n: u32) -> Option<String> {
        // (share of its class's compute × the interval's larger side, lo, hi, region)
        let mut worst: Option<(f64, f64, f64, &str)> = None;
        for class in &self.classes {
            let total: f64 = class.laws.iter().map(|l| l.law.eval(n) * l.blocks as f64).sum();
            if total <= 0.0 {
                continue;
            }
            for l in &class.laws {
                let share = l.law.eval(n) * l.blocks as f64 / total;
                if share < 0.01 {
                    continue;
                }
                let (lo, hi) = fit::interval(&l.noisy, n);
                let moved = share * (hi - 1.0).max(1.0 - lo);
                if worst.is_none_or(|w| moved > w.0) {
                    worst = Some((moved, lo, hi, &l.region));
                }
            }
        }
        let ratio = n as f64 / self.template_n as f64;
        let (moved, lo, hi, region) = worst?;
        if ratio <= 16.0 && moved <= 0.02 {
            return None;
        }
        Some(format!(
            "{n} ranks is {ratio:.0}x the largest traced count ({}; traced {:?}): the compute law that moves the prediction most has a 95 % interval of {:+.1} % .. {:+.1} % there ({region}); trace a larger count to narrow it",
            self.template_n,
            self.sample_ranks,
            (lo - 1.0) * 100.0,
            (hi - 1.0) * 100.0
        ))
    }

    fn records_with<'m>(&'m self, class: &'m Class, at_n: Arc<records::AtN>, rank: u32, n: u32) -> RankRecords<'m> {
        RankRecords { class, rank, n, next: 0, comms: Default::default(), at_n }
    }

    /// Whether every call of every class replays the same whatever the
    /// order the replay takes ranks in ([`crate::action::Action::order_sensitive`]), so
    /// that its streams may be replayed with
    /// [`crate::replay::Replay::order_free`]. Peers keep their kind
    /// across rank counts (an `MPI_ANY_SOURCE` stays one), so the
    /// template ranks' calls decide.
    pub fn order_free(&self) -> bool {
        self.classes.iter().all(|class| {
            let mut conv = RecordConverter::new(self.template_n);
            class.slots.iter().all(|slot| {
                let first = conv.convert(&slot.rec, 0.0, slot.region);
                let mut ok = first.as_ref().is_ok_and(|a| !a.order_sensitive());
                while let Some(a) = conv.pop() {
                    ok &= !a.order_sensitive();
                }
                ok
            })
        })
    }

    /// Replay streams of the `n` ranks (rank order), each generated as
    /// the replay reads it (the prediction, [`Variant::PREDICTION`]).
    pub fn streams(&self, n: u32) -> Vec<ActionStream<'_, ExtrapolateError>> {
        self.streams_as(n, Variant::PREDICTION, |e| e)
    }

    /// [`Model::streams`] of one variant ([`Model::records_as`]), with
    /// errors turned into `E` by `err` (one boxed stream per rank, without
    /// a wrapper around it). A rank without a class ([`Model::covers`])
    /// gets a stream of that error.
    pub fn streams_as<E: 'static>(&self, n: u32, variant: Variant, err: fn(ExtrapolateError) -> E) -> Vec<ActionStream<'_, E>> {
        // What each class's ranks share, computed once.
        let mut shared: Vec<(*const Class, Arc<records::AtN>)> = Vec::new();
        (0..n)
            .map(|r| {
                let Some(class) = self.class_of(r, n) else {
                    let e = self.covers(n).expect_err("a rank without a class");
                    return Box::new(std::iter::once(Err(err(e)))) as ActionStream<'_, E>;
                };
                let f = match shared.iter().find(|(c, _)| std::ptr::eq(*c, class)) {
                    Some((_, f)) => f.clone(),
                    None => {
                        let f = self.at_n(class, n, variant);
                        shared.push((class, f.clone()));
                        f
                    }
                };
                let mut recs = self.records_with(class, f, r, n);
                let mut conv = RecordConverter::new(n);
                let it = std::iter::from_fn(move || {
                    if let Some(a) = conv.pop() {
                        return Some(Ok(a));
                    }
                    SCRATCH.with_borrow_mut(|rec| {
                        let region = recs.next_into(rec)?;
                        Some(conv.convert(rec, rec.compute_cpu_ns as f64 * 1e-9, region).map_err(|op| {
                            err(ExtrapolateError::Irregular {
                                call: op.mpi_name(),
                                site: "(generated)".into(),
                                why: "the replay cannot represent it".into(),
                            })
                        }))
                    })
                });
                Box::new(it) as ActionStream<'_, E>
            })
            .collect()
    }

    /// Writes the extrapolated run of `n` ranks as an ordinary trace
    /// directory `out` (`meta.json` and a rank file each).
    ///
    /// # Errors
    /// [`ExtrapolateError::Write`] naming the file; the error of
    /// [`Model::covers`] when a rank of `n` has no class.
    pub fn write_dir(&self, n: u32, out: &Path) -> Result<(), ExtrapolateError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ExtrapolateError::Write { path: path.clone(), source }
        };
        self.covers(n)?;
        std::fs::create_dir_all(out).map_err(io(out))?;
        let meta = TraceMeta { ranks: n, mode: "extrapolated".into(), ..self.meta.clone() };
        let meta_path = out.join("meta.json");
        let json = serde_json::to_vec_pretty(&meta).map_err(|e| io(&meta_path)(e.into()))?;
        std::fs::write(&meta_path, json).map_err(io(&meta_path))?;
        for r in 0..n {
            let path = out.join(trace::rank_file_name(r));
            let file = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io(&path))?);
            let header = RankHeader { rank: r, ranks: n, ..self.header.clone() };
            let mut w = trace::writer::RankWriter::create(file, &header).map_err(io(&path))?;
            for rec in self.records(r, n) {
                w.push(&rec).map_err(io(&path))?;
            }
            w.finish(&self.modules).map_err(io(&path))?;
        }
        Ok(())
    }
}

/// The rule of each shape, checked at every sample: explicit rules for
/// shapes held by fixed ranks, [`ClassRule::Rest`] for the one left.
fn class_rules(samples: &[Sample], shape_of: &[Vec<usize>], nshapes: usize) -> Result<Vec<(usize, ClassRule)>, ExtrapolateError> {
    let mut explicit = Vec::new();
    let mut rest = Vec::new();
    for shape in 0..nshapes {
        let candidates = (0..4).map(ClassRule::Rank).chain((0..4).map(ClassRule::FromEnd));
        let fits = |rule: ClassRule| {
            samples.iter().zip(shape_of).all(|(s, ids)| (0..s.n()).all(|r| (ids[r as usize] == shape) == rule.holds(r, s.n())))
        };
        match candidates.into_iter().find(|&rule| fits(rule)) {
            Some(rule) => explicit.push((shape, rule)),
            None => rest.push(shape),
        }
    }
    if rest.len() > 1 {
        // Name the first call where two of the unnamed behaviours differ.
        let find =
            |shape: usize| samples.iter().zip(shape_of).find_map(|(s, ids)| ids.iter().position(|&i| i == shape).map(|r| &s.ranks[r].2));
        let (a, b) = (find(rest[0]).expect("a shape has a rank"), find(rest[1]).expect("a shape has a rank"));
        let at = a.iter().zip(b.iter()).position(|(x, y)| x.0.op != y.0.op || x.1 != y.1).unwrap_or(a.len().min(b.len()));
        let (rec, site) = a.get(at).or(a.last()).expect("a rank has records");
        return Err(irregular(
            rec,
            site,
            format!("ranks call in {} different orders that no rank rule (first, last, the rest) separates", rest.len()),
        ));
    }
    explicit.extend(rest.into_iter().map(|s| (s, ClassRule::Rest)));
    Ok(explicit)
}

/// The traced ranks of one shape, in sample order.
fn members_of(samples: &[Sample], shape_of: &[Vec<usize>], shape: usize) -> Vec<Member> {
    samples
        .iter()
        .enumerate()
        .flat_map(|(k, s)| {
            (0..s.n()).filter(move |&r| shape_of[k][r as usize] == shape).map(move |r| Member::traced(k, r, s.ranks[r as usize].2.len()))
        })
        .collect()
}

/// The class of `rule` from its members (traced ranks, or ranks made of
/// traced ranks' calls, in sample order): its slots' rules, its region
/// laws and its blocks. With a `layout`, peers that are neighbours on its
/// grid take the grid's rule first.
fn build_class(
    samples: &[Sample],
    obs: &[Member],
    rule: ClassRule,
    layout: Option<Layout>,
    folding: Option<loops::Folding>,
    symbols: &mut Symbolizer,
) -> Result<Class, ExtrapolateError> {
    let call = |m: &Member, i: usize| {
        let (r, j) = m.calls[i];
        (r, &samples[m.k].ranks[r as usize].2[j as usize])
    };
    let tm = obs.iter().find(|m| m.k == samples.len() - 1).unwrap_or(obs.last().expect("a class has a rank"));
    let tk = tm.k;
    let template: Vec<&(CallRecord, CallSite)> = (0..tm.calls.len()).map(|i| call(tm, i).1).collect();
    // Each observed rank's communicators (id → members), call by call.
    let mut comms: Vec<HashMap<u32, Vec<u32>>> = obs.iter().map(|_| HashMap::new()).collect();
    let mut law_of: HashMap<u64, usize> = HashMap::new();
    // Per region law: its name, per observed rank its blocks (ns), its
    // blocks per rank, and the call its blocks follow.
    let mut law_pts: Vec<(String, Vec<Vec<f64>>, usize, CallSite)> = Vec::new();
    let mut slots = Vec::with_capacity(template.len());
    // Peers whose direction along a short periodic side is unknown (slot,
    // peer, source line, why, observations), and the direction of each
    // source line's calls where a side was long enough (`None`: both).
    let mut blind = Vec::new();
    let mut directions: HashMap<String, Option<i64>> = HashMap::new();
    for (i, &(trec, tsite)) in template.iter().enumerate() {
        let prev = if i == 0 { CallSite { module: String::new(), offset: 0 } } else { template[i - 1].1.clone() };
        let region = region_id(&prev, tsite);
        let law = *law_of.entry(region).or_insert_with(|| {
            // Named as `trace regions` names it: `file:line` with debug
            // information, else `module+0xoffset`.
            let modules = &samples[tk].ranks[call(tm, i).0 as usize].1;
            let prev_addr = if i == 0 { 0 } else { template[i - 1].0.caller };
            let name = format!("{}:{}", symbols.name_in(modules, prev_addr), symbols.name_in(modules, trec.caller));
            law_pts.push((name, vec![Vec::new(); obs.len()], 0, prev.clone()));
            law_pts.len() - 1
        });
        law_pts[law].2 += 1;
        let mut peers: [Vec<PeerSeen>; 2] = [Vec::new(), Vec::new()];
        let mut sizes: [Vec<(u32, f64)>; 2] = [Vec::new(), Vec::new()];
        let mut members = Vec::new();
        let mut vecs: [Vec<vectors::VecSeen<'_>>; 2] = [Vec::new(), Vec::new()];
        // The calls that make this slot's rules: (member, its rank, the
        // call, its iteration, whether it is at this slot itself rather
        // than at another copy of its loop's body).
        type Seen<'a> = (usize, u32, &'a (CallRecord, CallSite), rules::Iter, bool);
        let seen: Vec<Seen<'_>> = match &folding {
            None => obs
                .iter()
                .enumerate()
                .map(|(o, m)| {
                    let (r, c) = call(m, i);
                    (o, r, c, rules::Iter::ONCE, true)
                })
                .collect(),
            Some(f) => f
                .group(i)
                .flat_map(|s| {
                    f.at[s].iter().map(move |&(o, idx, it)| {
                        let m = &obs[o as usize];
                        let r = m.rank.expect("a folded class's members are traced");
                        (o as usize, r, &samples[m.k].ranks[r as usize].2[idx as usize], it, s == i)
                    })
                })
                .collect(),
        };
        for (o, r, (rec, site), it, here) in seen {
            let m = &obs[o];
            let n = samples[m.k].n();
            if here {
                law_pts[law].1[o].push(rec.compute_cpu_ns as f64);
                if let Params::CommCreate { comm, members: mm, .. } = &rec.params {
                    comms[o].insert(*comm, mm.clone());
                    members.push((n, r, mm.clone()));
                }
            }
            let fields = Fields::of(&rec.params);
            let tfields = Fields::of(&trec.params);
            if fields.tags != tfields.tags || fields.comm != tfields.comm {
                return Err(irregular(rec, site, "its tag or communicator differs between ranks or runs".into()));
            }
            let world: Vec<u32>;
            let cm = match fields.comm.and_then(|c| comms[o].get(&c)) {
                Some(m) => m.as_slice(),
                None => {
                    world = (0..n).collect();
                    &world
                }
            };
            for (j, p) in fields.peers.iter().enumerate() {
                if let Some(p) = p {
                    peers[j].push(PeerSeen { n, r, p: *p, members: cm.to_vec(), it });
                }
            }
            for (j, b) in fields.sizes.iter().enumerate() {
                if let Some(b) = b {
                    sizes[j].push((n, *b as f64));
                }
            }
            if let (true, Params::Vcoll { root, send, recv, .. }) = (here, &rec.params) {
                let at = cm.iter().position(|&m| m == r).unwrap_or(r as usize) as u32;
                let is_root = *root >= 0 && *root as u32 == r;
                let size = cm.len() as u32;
                vecs[0].push(vectors::VecSeen { n: size, r: at, is_root, v: send });
                vecs[1].push(vectors::VecSeen { n: size, r: at, is_root, v: recv });
            }
        }
        // The written trace symbolises every rank against the largest
        // sample's rank 0 modules: the caller is moved there.
        let mut rec = trec.clone();
        if let Some(addr) = trace::address_in(&samples[samples.len() - 1].ranks[0].1, tsite) {
            rec.caller = addr;
        }
        let mut slot = Slot { rec, region, peers: [None, None], sizes: [None, None], members: None, vecs: [None, None], law };
        if matches!(trec.params, Params::Vcoll { .. }) {
            for (j, side) in ["send", "receive"].iter().enumerate() {
                slot.vecs[j] = Some(vectors::fit_vector(&vecs[j]).ok_or_else(|| {
                    irregular(
                        trec,
                        tsite,
                        format!(
                            "its {side} counts follow no rule the model knows (one size for all, or all but the rank's own, as a law of the communicator's size; α + β·index + γ·rank)"
                        ),
                    )
                })?);
            }
        }
        for j in 0..2 {
            if !peers[j].is_empty() {
                // Grid neighbours are point-to-point peers; a root is not one.
                let p2p = matches!(trec.params, Params::P2p { .. } | Params::Sendrecv { .. } | Params::Probe { .. });
                let neighbour = |r, p, n| layout.filter(|_| p2p).and_then(|l: Layout| l.neighbour_of(r, p, n));
                let rule = rules::fit_peer_on(&peers[j], neighbour).ok_or_else(|| {
                    irregular(
                        trec,
                        tsite,
                        "its peer is no function of the rank and the rank count that the model knows (data-dependent?)".into(),
                    )
                })?;
                // The source line of a periodic grid step, for the
                // direction of the same line's calls along short sides.
                let line = |symbols: &mut Symbolizer| {
                    let (r, _) = call(tm, i);
                    symbols.name_in(&samples[tk].ranks[r as usize].1, trec.caller)
                };
                if let Some(why) = rules::undetermined(&rule, &peers[j]) {
                    blind.push((i, j, line(symbols), why, std::mem::take(&mut peers[j])));
                } else if let Some(dir) = rules::direction(&rule, &peers[j]) {
                    let seen = directions.entry(line(symbols)).or_insert(Some(dir));
                    if *seen != Some(dir) {
                        *seen = None;
                    }
                }
                slot.peers[j] = Some(rule);
            }
            if !sizes[j].is_empty() {
                slot.sizes[j] = Some(size_law(&sizes[j]).map_err(|why| irregular(trec, tsite, why))?);
            }
        }
        if !members.is_empty() {
            let rule = rules::fit_members(&members)
                .ok_or_else(|| irregular(trec, tsite, "its members are no grid row, column, block or stride of the world".into()))?;
            slot.members = Some(rule);
        }
        slots.push(slot);
    }
    for (i, j, line, why, seen) in blind {
        let (trec, tsite) = template[i];
        let rule = slots[i].peers[j].expect("fitted");
        let dir = directions.get(&line).copied().flatten();
        slots[i].peers[j] = Some(dir.and_then(|d| rules::oriented(&rule, &seen, d)).ok_or_else(|| {
            irregular(trec, tsite, format!("{why}, or a count where a call from the same source line ({line}) steps along a longer side"))
        })?);
    }
    let after: Vec<CallSite> = law_pts.iter().map(|l| l.3.clone()).collect();
    let mut laws: Vec<RegionLaw> = law_pts
        .into_iter()
        .map(|(name, per_rank, blocks, _)| {
            let noisy: Vec<fit::Noisy> = (0..samples.len()).filter_map(|k| noisy_mean(obs, &per_rank, k, samples[k].n())).collect();
            let points = noisy.iter().map(|p| (p.n, p.y)).collect();
            RegionLaw { region: name, law: fit::fit_noisy(&noisy), points, noisy, blocks }
        })
        .collect();
    if folding.is_some() {
        scale_like_siblings(&mut laws, &after);
    }
    // The class's blocks per traced count, smallest first; the largest
    // count's ranks are the template members.
    let largest = obs.last().map_or(samples.len() - 1, |o| o.k);
    let runs = (0..=largest)
        .map(|k| {
            obs.iter()
                .filter(|o| o.k == k)
                .map(|m| (0..m.calls.len()).map(|i| call(m, i).1).map(|(rec, _)| (rec.compute_cpu_ns, rec.compute_wall_ns)).collect())
                .collect::<Vec<blocks::MemberBlocks>>()
        })
        .filter(|m| !m.is_empty())
        .collect();
    let law_of: Vec<usize> = slots.iter().map(|s| s.law).collect();
    // Target ranks take the blocks of the traced rank of their number when
    // it was a member; made members have none.
    let at_largest: Vec<&Member> = obs.iter().filter(|o| o.k == largest).collect();
    let ranks: Vec<u32> = at_largest.iter().map(|m| m.rank).collect::<Option<_>>().unwrap_or_default();
    let blocks = blocks::Blocks::new(runs, &ranks, &law_of, laws.len());
    Ok(Class { rule, slots, blocks, laws, loops: folding.map(|f| f.loops) })
}

/// Relative run-to-run noise of a class's mean block on a shared
/// machine, the least noise a mean is given: a whole run's blocks move
/// together with what else the machine runs, which the spread within
/// one run does not show.
const RUN_NOISE: f64 = 0.005;

/// The mean block (seconds) of one region at traced count `n` (sample
/// `k`) and its noise ([`fit::Noisy`]): the standard error of the mean
/// over the ranks' own means with two ranks or more, else over the
/// blocks, and at least [`RUN_NOISE`]; `None` without blocks there.
fn noisy_mean(obs: &[Member], per_rank: &[Vec<f64>], k: usize, n: u32) -> Option<fit::Noisy> {
    let ranks: Vec<&Vec<f64>> = obs.iter().zip(per_rank).filter(|(o, b)| o.k == k && !b.is_empty()).map(|(_, b)| b).collect();
    let count: usize = ranks.iter().map(|b| b.len()).sum();
    if count == 0 {
        return None;
    }
    let y = ranks.iter().flat_map(|b| b.iter()).sum::<f64>() / count as f64;
    let var = |v: &mut dyn Iterator<Item = f64>, m: f64, k: usize| v.map(|x| (x - m).powi(2)).sum::<f64>() / (k.max(2) - 1) as f64;
    let sigma = if ranks.len() >= 2 {
        let means: Vec<f64> = ranks.iter().map(|b| b.iter().sum::<f64>() / b.len() as f64).collect();
        (var(&mut means.iter().copied(), y, means.len()) / means.len() as f64).sqrt()
    } else {
        (var(&mut ranks[0].iter().copied(), y, count) / count as f64).sqrt()
    };
    Some(fit::Noisy { n, y: y * 1e-9, sigma: sigma.max(RUN_NOISE * y) * 1e-9 })
}

/// Region laws seen at fewer traced counts than another region whose
/// blocks follow the same call (`after[i]`, law i's) take that region's
/// law, scaled to their own blocks at the counts they have: a block's
/// work is the code that runs after the call before it, whichever call
/// ends it, so a loop's back edge, which the counts where the loop runs
/// once never show, scales as its exit does.
fn scale_like_siblings(laws: &mut [RegionLaw], after: &[CallSite]) {
    for i in 0..laws.len() {
        let own: Vec<u32> = laws[i].points.iter().map(|p| p.0).collect();
        let sibling = (0..laws.len())
            .filter(|&j| j != i && after[j] == after[i] && laws[j].noisy.len() > own.len())
            .filter(|&j| own.iter().all(|n| laws[j].noisy.iter().any(|q| q.n == *n)))
            .max_by_key(|&j| laws[j].noisy.len());
        let Some(j) = sibling else { continue };
        let at = |n: u32| laws[j].noisy.iter().find(|q| q.n == n).map_or(0.0, |q| q.y);
        let (mine, theirs) = laws[i].points.iter().fold((0.0, 0.0), |(a, b), &(n, y)| (a + y, b + at(n)));
        if theirs <= 0.0 {
            continue;
        }
        let f = mine / theirs;
        let noisy: Vec<fit::Noisy> = laws[j].noisy.iter().map(|q| fit::Noisy { y: q.y * f, sigma: q.sigma * f, ..*q }).collect();
        laws[i].law = fit::fit_noisy(&noisy);
        laws[i].noisy = noisy;
    }
}

/// A size law that every rank of a class follows: one size per run.
fn size_law(pts: &[(u32, f64)]) -> Result<Law, String> {
    let mut per_n: Vec<(u32, f64)> = Vec::new();
    for &(n, b) in pts {
        match per_n.iter().find(|(m, _)| *m == n) {
            Some(&(_, c)) if c != b => return Err(format!("its size differs between ranks of one class at {n} ranks ({c} and {b} bytes)")),
            Some(_) => {}
            None => per_n.push((n, b)),
        }
    }
    Ok(fit::fit_size(&per_n).0)
}

impl Class {
    /// What the traced runs' noise did to each region law's transient
    /// parts (detours left out, shrink, hold), in [`Class::laws`] order.
    pub fn noise(&self) -> &[Noise] {
        &self.blocks.noise
    }

    /// Calls each rank of the class makes at the largest traced count
    /// (at other counts, loops whose trip count changes with N make more
    /// or fewer).
    pub fn calls(&self) -> usize {
        self.slots.len()
    }

    /// The trip-count laws of the class's loops whose trip count changes
    /// with N (module `loops`), one per loop in call order; empty without.
    pub fn loop_laws(&self) -> &[loops::CountLaw] {
        self.loops.as_ref().map_or(&[], |l| &l.laws)
    }

    /// The size laws of the class's calls that change with N, with their
    /// call: for the report.
    pub fn size_laws(&self) -> impl Iterator<Item = (Op, Law)> + '_ {
        self.slots.iter().flat_map(|s| s.sizes.iter().flatten().filter(|l| l.a != 0.0).map(move |l| (s.rec.op, *l)))
    }
}

#[cfg(test)]
mod tests;
