//! tracecollector library.
