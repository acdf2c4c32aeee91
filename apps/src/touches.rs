//! Which arrays each stage of one iteration sweeps, and how: recorded by
//! [`crate::storage::sweep`] (and the sparse matrix's sweep) during one
//! iteration, for the declaration's `stage_access`. The model needs it for
//! an array that no rank had out of core while the trace was recorded:
//! mg's `u` goes to disk only past some row count, and is then read and
//! written in ten stages of an iteration, not in one.
//!
//! Stages are counted as [`crate::Ctx::stage`] runs them, the same count
//! the model makes of the interposer's stage markers.

use mheta_trace::StageAccess;
use std::sync::Mutex;

struct Recorder {
    stage: usize,
    stages: Vec<Vec<StageAccess>>,
}

static RECORDER: Mutex<Option<Recorder>> = Mutex::new(None);

fn with(f: impl FnOnce(&mut Recorder)) {
    if let Ok(mut g) = RECORDER.lock()
        && let Some(r) = g.as_mut()
    {
        f(r);
    }
}

/// Start recording (at an iteration's beginning).
pub fn begin() {
    if let Ok(mut g) = RECORDER.lock() {
        *g = Some(Recorder {
            stage: 0,
            stages: Vec::new(),
        });
    }
}

/// Stop recording: each stage's arrays, in stage order (None: not
/// recording).
pub fn end() -> Option<Vec<Vec<StageAccess>>> {
    let r = RECORDER.lock().ok()?.take()?;
    let mut stages = r.stages;
    stages.resize(r.stage.max(stages.len()), Vec::new());
    Some(stages)
}

/// The current stage swept array `file`.
pub fn note(file: &str, read: bool, write: bool) {
    with(|r| {
        if r.stages.len() <= r.stage {
            r.stages.resize(r.stage + 1, Vec::new());
        }
        let list = &mut r.stages[r.stage];
        match list.iter_mut().find(|a| a.file == file) {
            Some(a) => {
                a.read |= read;
                a.write |= write;
            }
            None => list.push(StageAccess {
                file: file.into(),
                read,
                write,
            }),
        }
    });
}

/// A stage ended.
pub fn stage_done() {
    with(|r| r.stage += 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_collect_their_arrays_in_order() {
        begin();
        note("u", true, true);
        note("f", true, false);
        note("u", true, false);
        stage_done();
        stage_done();
        note("r", false, true);
        stage_done();
        let s = end().unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            s[0],
            vec![
                StageAccess {
                    file: "u".into(),
                    read: true,
                    write: true
                },
                StageAccess {
                    file: "f".into(),
                    read: true,
                    write: false
                },
            ]
        );
        assert!(s[1].is_empty());
        assert_eq!(
            s[2],
            vec![StageAccess {
                file: "r".into(),
                read: false,
                write: true
            }]
        );
        // Not recording: nothing is kept.
        note("u", true, true);
        assert!(end().is_none());
    }
}
