//! Callbacks that count the event records [`crate::Event`] does not model
//! ([`crate::Archive::skipped`]): the ones a Score-P trace of an MPI
//! program commonly holds, and any record kind the library does not know.

use std::ffi::c_void;

use super::state;
use crate::sys::*;

macro_rules! skip {
    ($cb:expr, $($set:ident $name:literal ($($t:ty),*);)*) => {$({
        unsafe extern "C" fn f(_l: OTF2_LocationRef, _t: OTF2_TimeStamp, ud: *mut c_void, _a: *mut OTF2_AttributeList $(, _: $t)*) -> OTF2_CallbackCode {
            // SAFETY: registered with a `*mut State` (crate::read::read).
            *unsafe { state(ud) }.skipped.entry($name).or_default() += 1;
            OTF2_CALLBACK_SUCCESS as OTF2_CallbackCode
        }
        // SAFETY: `$cb` is a live callbacks object.
        unsafe { $set($cb, Some(f)) };
    })*};
}

/// Registers the counting callbacks on `cb`.
pub(crate) fn register(cb: *mut OTF2_GlobalEvtReaderCallbacks) {
    skip!(cb,
        OTF2_GlobalEvtReaderCallbacks_SetUnknownCallback "Unknown" ();
        OTF2_GlobalEvtReaderCallbacks_SetMpiRequestTestCallback "MpiRequestTest" (u64);
        OTF2_GlobalEvtReaderCallbacks_SetMetricCallback "Metric" (OTF2_MetricRef, u8, *const OTF2_Type, *const OTF2_MetricValue);
        OTF2_GlobalEvtReaderCallbacks_SetParameterStringCallback "ParameterString" (OTF2_ParameterRef, OTF2_StringRef);
        OTF2_GlobalEvtReaderCallbacks_SetParameterIntCallback "ParameterInt" (OTF2_ParameterRef, i64);
        OTF2_GlobalEvtReaderCallbacks_SetParameterUnsignedIntCallback "ParameterUnsignedInt" (OTF2_ParameterRef, u64);
        OTF2_GlobalEvtReaderCallbacks_SetThreadForkCallback "ThreadFork" (OTF2_Paradigm, u32);
        OTF2_GlobalEvtReaderCallbacks_SetThreadJoinCallback "ThreadJoin" (OTF2_Paradigm);
        OTF2_GlobalEvtReaderCallbacks_SetThreadTeamBeginCallback "ThreadTeamBegin" (OTF2_CommRef);
        OTF2_GlobalEvtReaderCallbacks_SetThreadTeamEndCallback "ThreadTeamEnd" (OTF2_CommRef);
        OTF2_GlobalEvtReaderCallbacks_SetThreadBeginCallback "ThreadBegin" (OTF2_CommRef, u64);
        OTF2_GlobalEvtReaderCallbacks_SetThreadEndCallback "ThreadEnd" (OTF2_CommRef, u64);
        OTF2_GlobalEvtReaderCallbacks_SetThreadCreateCallback "ThreadCreate" (OTF2_CommRef, u64);
        OTF2_GlobalEvtReaderCallbacks_SetThreadWaitCallback "ThreadWait" (OTF2_CommRef, u64);
        OTF2_GlobalEvtReaderCallbacks_SetOmpForkCallback "OmpFork" (u32);
        OTF2_GlobalEvtReaderCallbacks_SetOmpJoinCallback "OmpJoin" ();
        OTF2_GlobalEvtReaderCallbacks_SetIoOperationIssuedCallback "IoOperationIssued" (OTF2_IoHandleRef, u64);
        OTF2_GlobalEvtReaderCallbacks_SetIoOperationTestCallback "IoOperationTest" (OTF2_IoHandleRef, u64);
        OTF2_GlobalEvtReaderCallbacks_SetMeasurementOnOffCallback "MeasurementOnOff" (OTF2_MeasurementMode);
        OTF2_GlobalEvtReaderCallbacks_SetBufferFlushCallback "BufferFlush" (OTF2_TimeStamp);
        OTF2_GlobalEvtReaderCallbacks_SetProgramBeginCallback "ProgramBegin" (OTF2_StringRef, u32, *const OTF2_StringRef);
        OTF2_GlobalEvtReaderCallbacks_SetProgramEndCallback "ProgramEnd" (i64);
        OTF2_GlobalEvtReaderCallbacks_SetCallingContextEnterCallback "CallingContextEnter" (OTF2_CallingContextRef, u32);
        OTF2_GlobalEvtReaderCallbacks_SetCallingContextLeaveCallback "CallingContextLeave" (OTF2_CallingContextRef);
        OTF2_GlobalEvtReaderCallbacks_SetCallingContextSampleCallback "CallingContextSample" (OTF2_CallingContextRef, u32, OTF2_InterruptGeneratorRef);
        OTF2_GlobalEvtReaderCallbacks_SetRmaWinCreateCallback "RmaWinCreate" (OTF2_RmaWinRef);
        OTF2_GlobalEvtReaderCallbacks_SetRmaWinDestroyCallback "RmaWinDestroy" (OTF2_RmaWinRef);
        OTF2_GlobalEvtReaderCallbacks_SetRmaPutCallback "RmaPut" (OTF2_RmaWinRef, u32, u64, u64);
        OTF2_GlobalEvtReaderCallbacks_SetRmaGetCallback "RmaGet" (OTF2_RmaWinRef, u32, u64, u64);
    );
}
