//! The structs the C wrappers and the recorder share (`csrc/types.h`),
//! as bindgen writes them at build time: one layout, no copy to keep in
//! step. bindgen's layout tests (size, alignment and every field's offset)
//! run with the crate's unit tests.
#![allow(non_camel_case_types, missing_docs, clippy::all)]

include!(concat!(env!("OUT_DIR"), "/types.rs"));
