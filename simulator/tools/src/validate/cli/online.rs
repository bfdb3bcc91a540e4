//! `validate`'s online-mode run of a case.

use std::path::Path;

use indicatif::ProgressBar;

use super::timing::read_online;
use super::{checked_run, Ctx, Traced};
use crate::validate::launch::Mode;
use crate::validate::report::Row;
use crate::validate::suite::Case;

/// The online run (`row.online_s`), on the traced run's placed platform.
pub(super) fn online_case(case: &Case, ctx: &Ctx, dir: &Path, row: &mut Row, bar: &ProgressBar, traced: Option<&Traced>) {
    // Online mode models on the same placed platform (ours only: an XML
    // platform goes as it is).
    let online_platform = match traced {
        Some(t) if !ctx.platform_is_xml => {
            let p = dir.join("platform.toml");
            t.platform.save(&p).map(|_| p).unwrap_or_else(|_| ctx.platform_path.clone())
        }
        _ => ctx.platform_path.clone(),
    };
    let online = dir.join("online");
    bar.set_message(format!("{} online", case.name));
    let mode = Mode::Online { lib: ctx.interposer.clone(), out: online.clone(), platform: online_platform };
    // With INTERPOSER_VIRTUAL_WTIME=1 the program's wall_s is its own timed
    // region in virtual time: the online prediction of what it measures.
    match checked_run(case, &mode, &dir.join("online.log"), ctx, row) {
        Ok(virtual_wall_s) => match read_online(&online.join("online.json")) {
            Ok(_) => row.online_s = Some(virtual_wall_s),
            Err(e) => row.note(format!("online n/a: {e}")),
        },
        Err(e) => row.note(e),
    }
    bar.inc(1);
}
