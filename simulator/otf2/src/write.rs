//! Writing an archive: events streamed per location, definitions kept
//! in memory and written by [`Writer::finish`].

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::ptr;

use crate::error::{check, silence, Error};
use crate::model::{Comm, Event, Group, IoHandle, Location, Region, COUNTS_ATTRIBUTE, IRECV_ATTRIBUTES, OFFSET_ATTRIBUTE};
use crate::sys;

unsafe extern "C" fn pre_flush(
    _user: *mut std::os::raw::c_void,
    _file: sys::OTF2_FileType,
    _loc: sys::OTF2_LocationRef,
    _caller: *mut std::os::raw::c_void,
    _final: bool,
) -> sys::OTF2_FlushType {
    sys::OTF2_FLUSH as sys::OTF2_FlushType
}

unsafe extern "C" fn post_flush(
    _user: *mut std::os::raw::c_void,
    _file: sys::OTF2_FileType,
    _loc: sys::OTF2_LocationRef,
) -> sys::OTF2_TimeStamp {
    0
}

static FLUSH: sys::OTF2_FlushCallbacks = sys::OTF2_FlushCallbacks { otf2_pre_flush: Some(pre_flush), otf2_post_flush: Some(post_flush) };

/// An archive being written: `<dir>/<name>.otf2` (the anchor file),
/// `<name>.def` and `<name>/` (one event and one local definition file per
/// location).
///
/// Definitions are numbered in the order they are made (references are
/// dense from 0). Timestamps are ticks of the timer given to
/// [`Writer::create`]; each location's events must come in time order.
pub struct Writer {
    archive: *mut sys::OTF2_Archive,
    anchor: PathBuf,
    strings: Vec<String>,
    string_ids: HashMap<String, u32>,
    regions: Vec<Region>,
    region_ids: HashMap<(String, u8, u8, String), u32>,
    location_groups: Vec<String>,
    locations: BTreeMap<u64, (Location, u64)>,
    /// The last time written on each location, ticks.
    last_time: HashMap<u64, u64>,
    groups: Vec<Group>,
    comms: Vec<Comm>,
    io_handles: Vec<IoHandle>,
    io_files: Vec<String>,
    evt: BTreeMap<u64, *mut sys::OTF2_EvtWriter>,
    resolution: u64,
    first: u64,
    last: u64,
}

impl Writer {
    /// Creates the archive `name` in directory `dir` (created if missing),
    /// with timestamps in ticks of `resolution` per second (1e9: nanoseconds).
    ///
    /// # Errors
    /// [`Error`] naming the anchor file when it exists already or the
    /// library cannot create the archive.
    pub fn create(dir: &Path, name: &str, resolution: u64) -> Result<Writer, Error> {
        silence();
        let anchor = dir.join(format!("{name}.otf2"));
        if anchor.exists() || dir.join(name).exists() {
            return Err(Error::new(&anchor, "an archive of this name exists already (choose another --out)"));
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::new(dir, e.to_string()))?;
        let cdir = CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| Error::new(dir, "path holds a NUL byte"))?;
        let cname = CString::new(name).map_err(|_| Error::new(dir, "name holds a NUL byte"))?;
        // SAFETY: valid C strings; the library copies them.
        let archive = unsafe {
            sys::OTF2_Archive_Open(
                cdir.as_ptr(),
                cname.as_ptr(),
                sys::OTF2_FILEMODE_WRITE as u8,
                1024 * 1024,
                4 * 1024 * 1024,
                sys::OTF2_SUBSTRATE_POSIX as u8,
                sys::OTF2_COMPRESSION_NONE as u8,
            )
        };
        if archive.is_null() {
            return Err(Error::new(&anchor, "the OTF2 library cannot create the archive"));
        }
        let w = Writer {
            archive,
            anchor,
            strings: Vec::new(),
            string_ids: HashMap::new(),
            regions: Vec::new(),
            region_ids: HashMap::new(),
            location_groups: Vec::new(),
            locations: BTreeMap::new(),
            last_time: HashMap::new(),
            groups: Vec::new(),
            comms: Vec::new(),
            io_handles: Vec::new(),
            io_files: Vec::new(),
            evt: BTreeMap::new(),
            resolution,
            first: u64::MAX,
            last: 0,
        };
        // SAFETY: `archive` is open; FLUSH is 'static.
        unsafe {
            check(sys::OTF2_Archive_SetFlushCallbacks(archive, &FLUSH, ptr::null_mut()), &w.anchor, "set flush callbacks")?;
            check(sys::OTF2_Archive_SetSerialCollectiveCallbacks(archive), &w.anchor, "set collective callbacks")?;
            check(sys::OTF2_Archive_OpenEvtFiles(archive), &w.anchor, "open event files")?;
        }
        Ok(w)
    }

    fn string(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    /// The reference of region `name` with `role` and `paradigm`, defined on first use.
    pub fn region(&mut self, name: &str, role: u8, paradigm: u8) -> u32 {
        self.region_described(name, role, paradigm, "")
    }

    /// [`Writer::region`] with a description.
    pub fn region_described(&mut self, name: &str, role: u8, paradigm: u8, description: &str) -> u32 {
        let key = (name.to_string(), role, paradigm, description.to_string());
        if let Some(&id) = self.region_ids.get(&key) {
            return id;
        }
        let id = self.regions.len() as u32;
        self.string(name);
        self.string(description);
        self.regions.push(Region { name: name.to_string(), role, paradigm, description: description.to_string() });
        self.region_ids.insert(key, id);
        id
    }

    /// Defines a location group (a process) named `name`; returns its reference.
    pub fn location_group(&mut self, name: &str) -> u32 {
        self.string(name);
        self.location_groups.push(name.to_string());
        self.location_groups.len() as u32 - 1
    }

    /// Defines location `id` (a thread) named `name` in location group `group`.
    pub fn location(&mut self, id: u64, name: &str, group: u32) {
        self.string(name);
        self.locations.entry(id).or_insert((Location { name: name.to_string(), group }, 0));
    }

    /// Defines a group; returns its reference.
    pub fn group(&mut self, group: Group) -> u32 {
        self.string(&group.name);
        self.groups.push(group);
        self.groups.len() as u32 - 1
    }

    /// Defines a communicator; returns its reference.
    pub fn comm(&mut self, comm: Comm) -> u32 {
        self.string(&comm.name);
        self.comms.push(comm);
        self.comms.len() as u32 - 1
    }

    /// Defines an MPI-IO handle on a file (defined once per name); returns its reference.
    pub fn io_handle(&mut self, handle: IoHandle) -> u32 {
        self.string(&handle.name);
        self.string(&handle.file);
        if !self.io_files.contains(&handle.file) {
            self.io_files.push(handle.file.clone());
        }
        self.io_handles.push(handle);
        self.io_handles.len() as u32 - 1
    }

    fn evt_writer(&mut self, location: u64) -> Result<*mut sys::OTF2_EvtWriter, Error> {
        if let Some(&w) = self.evt.get(&location) {
            return Ok(w);
        }
        // SAFETY: the archive is open with its event files.
        let w = unsafe { sys::OTF2_Archive_GetEvtWriter(self.archive, location) };
        if w.is_null() {
            return Err(Error::new(&self.anchor, format!("cannot open the event writer of location {location}")));
        }
        self.evt.insert(location, w);
        Ok(w)
    }

    /// Writes `event` at `time` (ticks) on `location` (defined with
    /// [`Writer::location`], before or after). OTF2 refuses a time below
    /// the last one written on the location: such an event (a recorded
    /// block's start computed from clocks read apart can fall a few ticks
    /// before the previous call's end) takes the last time instead.
    ///
    /// # Errors
    /// [`Error`] naming the anchor file when the library refuses the event.
    pub fn event(&mut self, location: u64, time: u64, event: &Event) -> Result<(), Error> {
        let last = self.last_time.entry(location).or_insert(0);
        let time = time.max(*last);
        *last = time;
        let w = self.evt_writer(location)?;
        self.first = self.first.min(time);
        self.last = self.last.max(time);
        if let Some((_, n)) = self.locations.get_mut(&location) {
            *n += 1;
        }
        let a = self.attributes(event);
        // SAFETY: `w` is an open event writer of this archive.
        let code = unsafe {
            match event.clone() {
                Event::Enter { region } => sys::OTF2_EvtWriter_Enter(w, a, time, region),
                Event::Leave { region } => sys::OTF2_EvtWriter_Leave(w, a, time, region),
                Event::MpiSend { receiver, comm, tag, bytes } => sys::OTF2_EvtWriter_MpiSend(w, a, time, receiver, comm, tag, bytes),
                Event::MpiIsend { receiver, comm, tag, bytes, request } => {
                    sys::OTF2_EvtWriter_MpiIsend(w, a, time, receiver, comm, tag, bytes, request)
                }
                Event::MpiIsendComplete { request } => sys::OTF2_EvtWriter_MpiIsendComplete(w, a, time, request),
                Event::MpiIrecvRequest { request, .. } => sys::OTF2_EvtWriter_MpiIrecvRequest(w, a, time, request),
                Event::MpiRequestCancelled { request } => sys::OTF2_EvtWriter_MpiRequestCancelled(w, a, time, request),
                Event::MpiRecv { sender, comm, tag, bytes } => sys::OTF2_EvtWriter_MpiRecv(w, a, time, sender, comm, tag, bytes),
                Event::MpiIrecv { sender, comm, tag, bytes, request } => {
                    sys::OTF2_EvtWriter_MpiIrecv(w, a, time, sender, comm, tag, bytes, request)
                }
                Event::MpiCollectiveBegin => sys::OTF2_EvtWriter_MpiCollectiveBegin(w, a, time),
                Event::MpiCollectiveEnd { op, comm, root, sent, received, .. } => {
                    sys::OTF2_EvtWriter_MpiCollectiveEnd(w, a, time, op, comm, root, sent, received)
                }
                Event::NbcRequest { request } => sys::OTF2_EvtWriter_NonBlockingCollectiveRequest(w, a, time, request),
                Event::NbcComplete { op, comm, root, sent, received, request, .. } => {
                    sys::OTF2_EvtWriter_NonBlockingCollectiveComplete(w, a, time, op, comm, root, sent, received, request)
                }
                Event::IoCreateHandle { handle } => sys::OTF2_EvtWriter_IoCreateHandle(
                    w,
                    a,
                    time,
                    handle,
                    sys::OTF2_IO_ACCESS_MODE_READ_WRITE as u8,
                    sys::OTF2_IO_CREATION_FLAG_NONE,
                    sys::OTF2_IO_STATUS_FLAG_NONE,
                ),
                Event::IoDestroyHandle { handle } => sys::OTF2_EvtWriter_IoDestroyHandle(w, a, time, handle),
                Event::IoOperationBegin { handle, mode, flags, bytes, matching_id, .. } => {
                    sys::OTF2_EvtWriter_IoOperationBegin(w, a, time, handle, mode, flags, bytes, matching_id)
                }
                Event::IoOperationComplete { handle, bytes, matching_id } => {
                    sys::OTF2_EvtWriter_IoOperationComplete(w, a, time, handle, bytes, matching_id)
                }
            }
        };
        if !a.is_null() {
            // SAFETY: created by `attributes`, no longer used by the library.
            unsafe { sys::OTF2_AttributeList_Delete(a) };
        }
        check(code, &self.anchor, "write event")
    }

    /// The attribute list of `event` (our attributes, defined by
    /// `write_globals` as references 0-5), or null when it has none.
    fn attributes(&mut self, event: &Event) -> *mut sys::OTF2_AttributeList {
        let counts = match event {
            Event::MpiCollectiveEnd { counts, .. } | Event::NbcComplete { counts, .. } if !counts.is_empty() => {
                let text: Vec<String> = counts.iter().map(u64::to_string).collect();
                Some(self.string(&text.join(",")))
            }
            _ => None,
        };
        let wanted = matches!(event, Event::MpiIrecvRequest { posted: Some(_), .. } | Event::IoOperationBegin { offset: Some(_), .. });
        if counts.is_none() && !wanted {
            return ptr::null_mut();
        }
        // SAFETY: a fresh list (null on allocation failure: the event is then written without it).
        unsafe {
            let list = sys::OTF2_AttributeList_New();
            if list.is_null() {
                return list;
            }
            match (event, counts) {
                (Event::MpiIrecvRequest { posted: Some(p), .. }, _) => {
                    sys::OTF2_AttributeList_AddUint32(list, 0, p.sender);
                    sys::OTF2_AttributeList_AddUint32(list, 1, p.comm);
                    sys::OTF2_AttributeList_AddUint32(list, 2, p.tag);
                    sys::OTF2_AttributeList_AddUint64(list, 3, p.bytes);
                }
                (Event::IoOperationBegin { offset: Some(o), .. }, _) => {
                    sys::OTF2_AttributeList_AddUint64(list, 5, *o);
                }
                (_, Some(s)) => {
                    sys::OTF2_AttributeList_AddStringRef(list, 4, s);
                }
                _ => {}
            }
            list
        }
    }

    /// Closes the event files, writes the local and global definitions
    /// and closes the archive.
    ///
    /// # Errors
    /// [`Error`] naming the anchor file when the library fails.
    pub fn finish(mut self) -> Result<(), Error> {
        let r = self.close();
        // SAFETY: closed once; Drop sees a null archive.
        unsafe { sys::OTF2_Archive_Close(self.archive) };
        self.archive = ptr::null_mut();
        r
    }

    fn close(&mut self) -> Result<(), Error> {
        let (ar, anchor) = (self.archive, self.anchor.clone());
        let locs: Vec<u64> = self.locations.keys().copied().collect();
        // SAFETY: `ar` is open; every writer below belongs to it.
        unsafe {
            for (_, w) in std::mem::take(&mut self.evt) {
                check(sys::OTF2_Archive_CloseEvtWriter(ar, w), &anchor, "close event writer")?;
            }
            check(sys::OTF2_Archive_CloseEvtFiles(ar), &anchor, "close event files")?;
            check(sys::OTF2_Archive_OpenDefFiles(ar), &anchor, "open local definition files")?;
            for &l in &locs {
                let d = sys::OTF2_Archive_GetDefWriter(ar, l);
                if d.is_null() {
                    return Err(Error::new(&anchor, format!("cannot open the definition writer of location {l}")));
                }
                check(sys::OTF2_Archive_CloseDefWriter(ar, d), &anchor, "close definition writer")?;
            }
            check(sys::OTF2_Archive_CloseDefFiles(ar), &anchor, "close local definition files")?;
            let g = sys::OTF2_Archive_GetGlobalDefWriter(ar);
            if g.is_null() {
                return Err(Error::new(&anchor, "cannot open the global definition writer"));
            }
            self.write_globals(g)
        }
    }

    /// # Safety
    /// `g` is the archive's open global definition writer.
    unsafe fn write_globals(&mut self, g: *mut sys::OTF2_GlobalDefWriter) -> Result<(), Error> {
        let anchor = self.anchor.clone();
        let ok = |code, what: &str| check(code, &anchor, what);
        let (first, last) = if self.first == u64::MAX { (0, 0) } else { (self.first, self.last) };
        let node_name = self.string("machine");
        let node_class = self.string("machine");
        let mpi_io = self.string("MPI-IO");
        let empty = self.string("");
        let attrs: Vec<u32> = IRECV_ATTRIBUTES.iter().chain([&COUNTS_ATTRIBUTE, &OFFSET_ATTRIBUTE]).map(|n| self.string(n)).collect();
        let none = sys::OTF2_UNDEFINED_UINT32;
        // SAFETY (whole block): `g` is open (caller); pointers passed are live for each call.
        unsafe {
            ok(sys::OTF2_GlobalDefWriter_WriteClockProperties(g, self.resolution, first, last - first + 1, u64::MAX), "clock properties")?;
            for (i, s) in self.strings.iter().enumerate() {
                let c = CString::new(s.replace('\0', " ")).expect("NULs replaced");
                ok(sys::OTF2_GlobalDefWriter_WriteString(g, i as u32, c.as_ptr()), "string")?;
            }
            for (i, &name) in attrs.iter().enumerate() {
                let ty = match i {
                    3 | 5 => sys::OTF2_TYPE_UINT64,
                    4 => sys::OTF2_TYPE_STRING,
                    _ => sys::OTF2_TYPE_UINT32,
                } as u8;
                ok(sys::OTF2_GlobalDefWriter_WriteAttribute(g, i as u32, name, empty, ty), "attribute")?;
            }
            ok(sys::OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, node_name, node_class, none), "system tree node")?;
            for (i, name) in self.location_groups.iter().enumerate() {
                let name = self.string_ids[name];
                ok(
                    sys::OTF2_GlobalDefWriter_WriteLocationGroup(g, i as u32, name, sys::OTF2_LOCATION_GROUP_TYPE_PROCESS as u8, 0, none),
                    "location group",
                )?;
            }
            for (&id, (loc, n)) in &self.locations {
                let name = self.string_ids[&loc.name];
                ok(
                    sys::OTF2_GlobalDefWriter_WriteLocation(g, id, name, sys::OTF2_LOCATION_TYPE_CPU_THREAD as u8, *n, loc.group),
                    "location",
                )?;
            }
            for (i, r) in self.regions.iter().enumerate() {
                let name = self.string_ids[&r.name];
                let desc = self.string_ids[&r.description];
                let code = sys::OTF2_GlobalDefWriter_WriteRegion(g, i as u32, name, name, desc, r.role, r.paradigm, 0, empty, 0, 0);
                ok(code, "region")?;
            }
            for (i, gr) in self.groups.iter().enumerate() {
                let name = self.string_ids[&gr.name];
                let n = gr.members.len() as u32;
                ok(sys::OTF2_GlobalDefWriter_WriteGroup(g, i as u32, name, gr.kind, gr.paradigm, 0, n, gr.members.as_ptr()), "group")?;
            }
            for (i, c) in self.comms.iter().enumerate() {
                let name = self.string_ids[&c.name];
                ok(sys::OTF2_GlobalDefWriter_WriteComm(g, i as u32, name, c.group, c.parent.unwrap_or(none), 0), "communicator")?;
            }
            if !self.io_handles.is_empty() {
                let class = sys::OTF2_IO_PARADIGM_CLASS_PARALLEL as u8;
                let code =
                    sys::OTF2_GlobalDefWriter_WriteIoParadigm(g, 0, mpi_io, mpi_io, class, 0, 0, ptr::null(), ptr::null(), ptr::null());
                ok(code, "I/O paradigm")?;
                for (i, f) in self.io_files.iter().enumerate() {
                    ok(sys::OTF2_GlobalDefWriter_WriteIoRegularFile(g, i as u32, self.string_ids[f], 0), "I/O file")?;
                }
                for (i, h) in self.io_handles.iter().enumerate() {
                    let file = self.io_files.iter().position(|f| *f == h.file).expect("defined with the handle") as u32;
                    let comm = h.comm.unwrap_or(none);
                    let code = sys::OTF2_GlobalDefWriter_WriteIoHandle(g, i as u32, self.string_ids[&h.name], file, 0, 0, comm, none);
                    ok(code, "I/O handle")?;
                }
            }
        }
        Ok(())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.archive.is_null() {
            // SAFETY: open and not closed by `finish`.
            unsafe { sys::OTF2_Archive_Close(self.archive) };
        }
    }
}
