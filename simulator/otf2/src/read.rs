//! Reading a whole archive: global definitions, then every location's
//! events in time order (the library's global event reader).

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_void, CStr, CString};
use std::os::raw::c_char;
use std::path::{Path, PathBuf};

use crate::error::{check, silence, Error};
use crate::model::{Comm, Event, Group, IoHandle, Location, Posted, Region, COUNTS_ATTRIBUTE, IRECV_ATTRIBUTES, OFFSET_ATTRIBUTE};
use crate::sys::{self, OTF2_AttributeList as Attrs, OTF2_CallbackCode as Code, OTF2_LocationRef as Loc, OTF2_TimeStamp as Time};

mod skip;

/// An archive's definitions and events.
#[derive(Debug, Default)]
pub struct Archive {
    /// The anchor file read.
    pub anchor: PathBuf,
    /// Timer ticks per second.
    pub resolution: u64,
    /// Regions by reference.
    pub regions: HashMap<u32, Region>,
    /// Locations by id.
    pub locations: BTreeMap<u64, Location>,
    /// Groups by reference.
    pub groups: HashMap<u32, Group>,
    /// Communicators by reference.
    pub comms: HashMap<u32, Comm>,
    /// I/O handles by reference.
    pub io_handles: HashMap<u32, IoHandle>,
    /// Each location's events `(time in ticks, event)`, in time order.
    pub events: BTreeMap<u64, Vec<(u64, Event)>>,
    /// Records of kinds [`Event`] does not model, by OTF2 record name, and their counts.
    pub skipped: BTreeMap<&'static str, u64>,
}

#[derive(Default)]
pub(crate) struct State {
    strings: HashMap<u32, String>,
    regions: HashMap<u32, (u32, u8, u8, u32)>,
    locations: BTreeMap<u64, (u32, u32)>,
    groups: HashMap<u32, (u32, u8, u8, Vec<u64>)>,
    comms: HashMap<u32, (u32, u32, u32)>,
    io_files: HashMap<u32, u32>,
    io_handles: HashMap<u32, (u32, u32, u32)>,
    resolution: u64,
    /// Attribute reference → name string reference.
    attributes: HashMap<u32, u32>,
    /// References of the [`IRECV_ATTRIBUTES`], when the archive defines them all.
    irecv_attrs: Option<[u32; 4]>,
    /// Reference of the [`COUNTS_ATTRIBUTE`], when defined.
    counts_attr: Option<u32>,
    /// Reference of the [`OFFSET_ATTRIBUTE`], when defined.
    offset_attr: Option<u32>,
    pub(crate) events: BTreeMap<u64, Vec<(u64, Event)>>,
    pub(crate) skipped: BTreeMap<&'static str, u64>,
}

/// # Safety
/// `ud` is the `*mut State` registered with the callbacks.
pub(crate) unsafe fn state<'a>(ud: *mut c_void) -> &'a mut State {
    // SAFETY: as the caller promises.
    unsafe { &mut *(ud as *mut State) }
}

const OK: Code = sys::OTF2_CALLBACK_SUCCESS as Code;

unsafe extern "C" fn d_string(ud: *mut c_void, id: u32, s: *const c_char) -> Code {
    // SAFETY: the library passes a NUL-terminated string.
    let s = if s.is_null() { String::new() } else { unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned() };
    unsafe { state(ud) }.strings.insert(id, s);
    OK
}
unsafe extern "C" fn d_clock(ud: *mut c_void, res: u64, _off: u64, _len: u64, _rt: u64) -> Code {
    unsafe { state(ud) }.resolution = res;
    OK
}
unsafe extern "C" fn d_attribute(ud: *mut c_void, id: u32, name: u32, _d: u32, _t: u8) -> Code {
    unsafe { state(ud) }.attributes.insert(id, name);
    OK
}
unsafe extern "C" fn d_location(ud: *mut c_void, id: Loc, name: u32, _t: u8, _n: u64, group: u32) -> Code {
    unsafe { state(ud) }.locations.insert(id, (name, group));
    OK
}
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn d_region(
    ud: *mut c_void,
    id: u32,
    name: u32,
    _c: u32,
    desc: u32,
    role: u8,
    par: u8,
    _f: u32,
    _s: u32,
    _b: u32,
    _e: u32,
) -> Code {
    unsafe { state(ud) }.regions.insert(id, (name, role, par, desc));
    OK
}
unsafe extern "C" fn d_group(ud: *mut c_void, id: u32, name: u32, kind: u8, par: u8, _f: u32, n: u32, m: *const u64) -> Code {
    // SAFETY: `m` holds `n` members.
    let members = if m.is_null() || n == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(m, n as usize) }.to_vec() };
    unsafe { state(ud) }.groups.insert(id, (name, kind, par, members));
    OK
}
unsafe extern "C" fn d_comm(ud: *mut c_void, id: u32, name: u32, group: u32, parent: u32, _f: u32) -> Code {
    unsafe { state(ud) }.comms.insert(id, (name, group, parent));
    OK
}
unsafe extern "C" fn d_io_file(ud: *mut c_void, id: u32, name: u32, _scope: u32) -> Code {
    unsafe { state(ud) }.io_files.insert(id, name);
    OK
}
unsafe extern "C" fn d_io_handle(ud: *mut c_void, id: u32, name: u32, file: u32, _p: u8, _f: u32, comm: u32, _parent: u32) -> Code {
    unsafe { state(ud) }.io_handles.insert(id, (name, file, comm));
    OK
}

/// The per-member counts attached to a collective event, if any.
fn counts_of(ud: *mut c_void, a: *mut Attrs) -> Vec<u64> {
    // SAFETY: `ud` is the registered `*mut State`; `a` the event's list or null.
    let st = unsafe { state(ud) };
    let (Some(attr), false) = (st.counts_attr, a.is_null()) else { return Vec::new() };
    let mut sref = 0u32;
    if unsafe { sys::OTF2_AttributeList_GetStringRef(a, attr, &mut sref) } != sys::OTF2_SUCCESS {
        return Vec::new();
    }
    let text = st.strings.get(&sref).map_or("", String::as_str);
    text.split(',').map(|x| x.trim().parse::<u64>()).collect::<Result<Vec<_>, _>>().unwrap_or_default()
}

fn push(ud: *mut c_void, loc: Loc, t: Time, e: Event) -> Code {
    // SAFETY: every event callback is registered with a `*mut State`.
    unsafe { state(ud) }.events.entry(loc).or_default().push((t, e));
    OK
}
unsafe extern "C" fn e_enter(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, region: u32) -> Code {
    push(ud, l, t, Event::Enter { region })
}
unsafe extern "C" fn e_leave(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, region: u32) -> Code {
    push(ud, l, t, Event::Leave { region })
}
unsafe extern "C" fn e_send(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, receiver: u32, comm: u32, tag: u32, bytes: u64) -> Code {
    push(ud, l, t, Event::MpiSend { receiver, comm, tag, bytes })
}
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn e_isend(
    l: Loc,
    t: Time,
    ud: *mut c_void,
    _a: *mut Attrs,
    receiver: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
    request: u64,
) -> Code {
    push(ud, l, t, Event::MpiIsend { receiver, comm, tag, bytes, request })
}
unsafe extern "C" fn e_isend_complete(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, request: u64) -> Code {
    push(ud, l, t, Event::MpiIsendComplete { request })
}
unsafe extern "C" fn e_irecv_request(l: Loc, t: Time, ud: *mut c_void, a: *mut Attrs, request: u64) -> Code {
    // SAFETY: registered with a `*mut State`; `a` is the event's attribute list or null.
    let refs = unsafe { state(ud) }.irecv_attrs;
    let posted = match refs {
        Some(r) if !a.is_null() => unsafe {
            let (mut sender, mut comm, mut tag, mut bytes) = (0u32, 0u32, 0u32, 0u64);
            let all = sys::OTF2_AttributeList_GetUint32(a, r[0], &mut sender) == sys::OTF2_SUCCESS
                && sys::OTF2_AttributeList_GetUint32(a, r[1], &mut comm) == sys::OTF2_SUCCESS
                && sys::OTF2_AttributeList_GetUint32(a, r[2], &mut tag) == sys::OTF2_SUCCESS
                && sys::OTF2_AttributeList_GetUint64(a, r[3], &mut bytes) == sys::OTF2_SUCCESS;
            all.then_some(Posted { sender, comm, tag, bytes })
        },
        _ => None,
    };
    push(ud, l, t, Event::MpiIrecvRequest { request, posted })
}
unsafe extern "C" fn e_cancelled(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, request: u64) -> Code {
    push(ud, l, t, Event::MpiRequestCancelled { request })
}
unsafe extern "C" fn e_recv(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, sender: u32, comm: u32, tag: u32, bytes: u64) -> Code {
    push(ud, l, t, Event::MpiRecv { sender, comm, tag, bytes })
}
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn e_irecv(
    l: Loc,
    t: Time,
    ud: *mut c_void,
    _a: *mut Attrs,
    sender: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
    request: u64,
) -> Code {
    push(ud, l, t, Event::MpiIrecv { sender, comm, tag, bytes, request })
}
unsafe extern "C" fn e_coll_begin(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs) -> Code {
    push(ud, l, t, Event::MpiCollectiveBegin)
}
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn e_coll_end(
    l: Loc,
    t: Time,
    ud: *mut c_void,
    a: *mut Attrs,
    op: u8,
    comm: u32,
    root: u32,
    sent: u64,
    received: u64,
) -> Code {
    let counts = counts_of(ud, a);
    push(ud, l, t, Event::MpiCollectiveEnd { op, comm, root, sent, received, counts })
}
unsafe extern "C" fn e_nbc_request(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, request: u64) -> Code {
    push(ud, l, t, Event::NbcRequest { request })
}
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn e_nbc_complete(
    l: Loc,
    t: Time,
    ud: *mut c_void,
    a: *mut Attrs,
    op: u8,
    comm: u32,
    root: u32,
    sent: u64,
    received: u64,
    request: u64,
) -> Code {
    let counts = counts_of(ud, a);
    push(ud, l, t, Event::NbcComplete { op, comm, root, sent, received, counts, request })
}
unsafe extern "C" fn e_io_create(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, handle: u32, _m: u8, _c: u32, _s: u32) -> Code {
    push(ud, l, t, Event::IoCreateHandle { handle })
}
unsafe extern "C" fn e_io_destroy(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, handle: u32) -> Code {
    push(ud, l, t, Event::IoDestroyHandle { handle })
}
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn e_io_begin(
    l: Loc,
    t: Time,
    ud: *mut c_void,
    a: *mut Attrs,
    handle: u32,
    mode: u8,
    flags: u32,
    bytes: u64,
    matching_id: u64,
) -> Code {
    // SAFETY: registered with a `*mut State`; `a` is the event's attribute list or null.
    let offset = match unsafe { state(ud) }.offset_attr {
        Some(r) if !a.is_null() => {
            let mut o = 0u64;
            (unsafe { sys::OTF2_AttributeList_GetUint64(a, r, &mut o) } == sys::OTF2_SUCCESS).then_some(o)
        }
        _ => None,
    };
    push(ud, l, t, Event::IoOperationBegin { handle, mode, flags, bytes, matching_id, offset })
}
unsafe extern "C" fn e_io_complete(l: Loc, t: Time, ud: *mut c_void, _a: *mut Attrs, handle: u32, bytes: u64, matching_id: u64) -> Code {
    push(ud, l, t, Event::IoOperationComplete { handle, bytes, matching_id })
}

/// The anchor file `path` names: `path` itself, or the one `*.otf2` file
/// in directory `path`.
fn anchor_of(path: &Path) -> Result<PathBuf, Error> {
    let meta = std::fs::metadata(path).map_err(|e| Error::new(path, e.to_string()))?;
    if !meta.is_dir() {
        return Ok(path.to_path_buf());
    }
    let rd = std::fs::read_dir(path).map_err(|e| Error::new(path, e.to_string()))?;
    let mut anchors: Vec<PathBuf> = rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "otf2")).collect();
    anchors.sort();
    match anchors.len() {
        1 => Ok(anchors.remove(0)),
        0 => Err(Error::new(path, "no OTF2 anchor file (*.otf2) in this directory")),
        n => Err(Error::new(path, format!("{n} OTF2 anchor files (*.otf2) in this directory: name one"))),
    }
}

struct Reader(*mut sys::OTF2_Reader);

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: opened by OTF2_Reader_Open, closed only here.
        unsafe { sys::OTF2_Reader_Close(self.0) };
    }
}

/// Reads the archive at `path` (its `.otf2` anchor file, or a directory
/// holding exactly one): all global definitions, then every location's
/// events.
///
/// # Errors
/// [`Error`] naming the path when it does not exist, holds no single
/// anchor file, or the library cannot read it (a truncated or corrupt
/// archive).
pub fn read(path: &Path) -> Result<Archive, Error> {
    silence();
    let anchor = anchor_of(path)?;
    let c = CString::new(anchor.as_os_str().as_encoded_bytes()).map_err(|_| Error::new(&anchor, "path holds a NUL byte"))?;
    let mut st = Box::new(State::default());
    let ud = &mut *st as *mut State as *mut c_void;
    // SAFETY: valid C string.
    let r = unsafe { sys::OTF2_Reader_Open(c.as_ptr()) };
    if r.is_null() {
        return Err(Error::new(&anchor, "not an OTF2 archive the library can open"));
    }
    let reader = Reader(r);
    let a = &anchor;
    // SAFETY (whole block): `r` is open; callbacks get `ud`, a live `*mut State` for the reads below.
    unsafe {
        check(sys::OTF2_Reader_SetSerialCollectiveCallbacks(r), a, "set collective callbacks")?;
        let g = sys::OTF2_Reader_GetGlobalDefReader(r);
        if g.is_null() {
            return Err(Error::new(a, "cannot read the global definitions (missing or unreadable .def file)"));
        }
        let cb = sys::OTF2_GlobalDefReaderCallbacks_New();
        sys::OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, Some(d_string));
        sys::OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, Some(d_clock));
        sys::OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, Some(d_location));
        sys::OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(cb, Some(d_attribute));
        sys::OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, Some(d_region));
        sys::OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, Some(d_group));
        sys::OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb, Some(d_comm));
        sys::OTF2_GlobalDefReaderCallbacks_SetIoRegularFileCallback(cb, Some(d_io_file));
        sys::OTF2_GlobalDefReaderCallbacks_SetIoHandleCallback(cb, Some(d_io_handle));
        let code = sys::OTF2_Reader_RegisterGlobalDefCallbacks(r, g, cb, ud);
        sys::OTF2_GlobalDefReaderCallbacks_Delete(cb);
        check(code, a, "register definition callbacks")?;
        let mut n = 0u64;
        check(sys::OTF2_Reader_ReadAllGlobalDefinitions(r, g, &mut n), a, "read global definitions")?;
        check(sys::OTF2_Reader_CloseGlobalDefReader(r, g), a, "close global definitions")?;
        let by_name = |n: &str| st.attributes.iter().find(|(_, s)| st.strings.get(s).is_some_and(|x| x == n)).map(|(&r, _)| r);
        let refs: Vec<u32> = IRECV_ATTRIBUTES.iter().filter_map(|n| by_name(n)).collect();
        st.irecv_attrs = <[u32; 4]>::try_from(refs).ok();
        st.counts_attr = by_name(COUNTS_ATTRIBUTE);
        st.offset_attr = by_name(OFFSET_ATTRIBUTE);
        let locs: Vec<u64> = st.locations.keys().copied().collect();
        for &l in &locs {
            check(sys::OTF2_Reader_SelectLocation(r, l), a, "select location")?;
        }
        let have_defs = sys::OTF2_Reader_OpenDefFiles(r) == sys::OTF2_SUCCESS;
        check(sys::OTF2_Reader_OpenEvtFiles(r), a, "open event files")?;
        for &l in &locs {
            if have_defs {
                let d = sys::OTF2_Reader_GetDefReader(r, l);
                if !d.is_null() {
                    let mut n = 0u64;
                    check(sys::OTF2_Reader_ReadAllLocalDefinitions(r, d, &mut n), a, "read local definitions")?;
                    check(sys::OTF2_Reader_CloseDefReader(r, d), a, "close local definitions")?;
                }
            }
            if sys::OTF2_Reader_GetEvtReader(r, l).is_null() {
                return Err(Error::new(a, format!("cannot open the events of location {l}")));
            }
        }
        if have_defs {
            check(sys::OTF2_Reader_CloseDefFiles(r), a, "close local definition files")?;
        }
        let ge = sys::OTF2_Reader_GetGlobalEvtReader(r);
        if ge.is_null() {
            return Err(Error::new(a, "cannot read the events"));
        }
        let cb = sys::OTF2_GlobalEvtReaderCallbacks_New();
        sys::OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(cb, Some(e_enter));
        sys::OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(cb, Some(e_leave));
        sys::OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(cb, Some(e_send));
        sys::OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback(cb, Some(e_isend));
        sys::OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback(cb, Some(e_isend_complete));
        sys::OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback(cb, Some(e_irecv_request));
        sys::OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(cb, Some(e_recv));
        sys::OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback(cb, Some(e_irecv));
        sys::OTF2_GlobalEvtReaderCallbacks_SetMpiRequestCancelledCallback(cb, Some(e_cancelled));
        sys::OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback(cb, Some(e_coll_begin));
        sys::OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(cb, Some(e_coll_end));
        sys::OTF2_GlobalEvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback(cb, Some(e_nbc_request));
        sys::OTF2_GlobalEvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(cb, Some(e_nbc_complete));
        sys::OTF2_GlobalEvtReaderCallbacks_SetIoCreateHandleCallback(cb, Some(e_io_create));
        sys::OTF2_GlobalEvtReaderCallbacks_SetIoDestroyHandleCallback(cb, Some(e_io_destroy));
        sys::OTF2_GlobalEvtReaderCallbacks_SetIoOperationBeginCallback(cb, Some(e_io_begin));
        sys::OTF2_GlobalEvtReaderCallbacks_SetIoOperationCompleteCallback(cb, Some(e_io_complete));
        skip::register(cb);
        let code = sys::OTF2_Reader_RegisterGlobalEvtCallbacks(r, ge, cb, ud);
        sys::OTF2_GlobalEvtReaderCallbacks_Delete(cb);
        check(code, a, "register event callbacks")?;
        let mut n = 0u64;
        check(sys::OTF2_Reader_ReadAllGlobalEvents(r, ge, &mut n), a, "read events")?;
        check(sys::OTF2_Reader_CloseGlobalEvtReader(r, ge), a, "close events")?;
        check(sys::OTF2_Reader_CloseEvtFiles(r), a, "close event files")?;
    }
    drop(reader);
    Ok(resolve(*st, anchor))
}

fn resolve(st: State, anchor: PathBuf) -> Archive {
    let s = |id: u32| st.strings.get(&id).cloned().unwrap_or_default();
    let opt = |id: u32| (id != sys::OTF2_UNDEFINED_UINT32).then_some(id);
    Archive {
        anchor,
        resolution: if st.resolution == 0 { 1 } else { st.resolution },
        regions: st
            .regions
            .iter()
            .map(|(&id, &(n, role, paradigm, d))| (id, Region { name: s(n), role, paradigm, description: s(d) }))
            .collect(),
        locations: st.locations.iter().map(|(&id, &(n, group))| (id, Location { name: s(n), group })).collect(),
        groups: st
            .groups
            .iter()
            .map(|(&id, (n, kind, paradigm, m))| (id, Group { name: s(*n), kind: *kind, paradigm: *paradigm, members: m.clone() }))
            .collect(),
        comms: st.comms.iter().map(|(&id, &(n, group, parent))| (id, Comm { name: s(n), group, parent: opt(parent) })).collect(),
        io_handles: st
            .io_handles
            .iter()
            .map(|(&id, &(n, f, comm))| {
                (id, IoHandle { name: s(n), file: st.io_files.get(&f).map(|&f| s(f)).unwrap_or_default(), comm: opt(comm) })
            })
            .collect(),
        events: st.events,
        skipped: st.skipped,
    }
}
