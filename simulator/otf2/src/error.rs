//! The error of an OTF2 read or write: the archive's path and what failed.

use std::ffi::CStr;
use std::path::PathBuf;

use crate::sys;

/// Why an archive could not be written or read; its message is one line
/// naming the file (`<path>: <what>`).
#[derive(Debug, thiserror::Error)]
#[error("{}: {what}", path.display())]
pub struct Error {
    /// The anchor file or archive directory at fault.
    pub path: PathBuf,
    /// What failed, with the OTF2 library's description of its error code.
    pub what: String,
}

impl Error {
    pub(crate) fn new(path: impl Into<PathBuf>, what: impl Into<String>) -> Error {
        Error { path: path.into(), what: what.into() }
    }
}

/// The library's description of `code`.
pub(crate) fn describe(code: sys::OTF2_ErrorCode) -> String {
    // SAFETY: OTF2_Error_GetDescription returns a static NUL-terminated string for every code.
    let p = unsafe { sys::OTF2_Error_GetDescription(code) };
    if p.is_null() {
        return format!("OTF2 error {code}");
    }
    // SAFETY: non-null, static and NUL-terminated (above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// `Ok` for `OTF2_SUCCESS`, else an [`Error`] saying `what` failed and why.
pub(crate) fn check(code: sys::OTF2_ErrorCode, path: &std::path::Path, what: &str) -> Result<(), Error> {
    if code == sys::OTF2_SUCCESS {
        Ok(())
    } else {
        Err(Error::new(path, format!("{what}: {}", describe(code))))
    }
}

unsafe extern "C" fn quiet(
    _user: *mut std::os::raw::c_void,
    _file: *const std::os::raw::c_char,
    _line: u64,
    _function: *const std::os::raw::c_char,
    code: sys::OTF2_ErrorCode,
    _fmt: *const std::os::raw::c_char,
    _va: *mut sys::__va_list_tag,
) -> sys::OTF2_ErrorCode {
    code
}

/// Stops the library printing its own messages on stderr: our callers
/// report each failure once, as one line ([`Error`]).
pub(crate) fn silence() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a callback that only returns the code it is given.
    ONCE.call_once(|| unsafe {
        sys::OTF2_Error_RegisterCallback(Some(quiet), std::ptr::null_mut());
    });
}
