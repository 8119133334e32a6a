//! Work done with the GIL released, on a thread of its own, while the calling thread looks
//! at Python's signals every 50 ms: on Ctrl-C (or any signal handler that raises) it cancels
//! the work's [`Cancel`], waits for the work to stop (runs look at it every
//! `CANCEL_CHECK_EVENTS` events, a few milliseconds) and raises what the handler raised,
//! `KeyboardInterrupt` for Ctrl-C. Signals reach Python's handlers on the main thread only;
//! from another thread the work simply runs to its end.

use pyo3::prelude::*;
use scenarios::Cancel;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

/// How often the calling thread looks at Python's signals.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// `work`, run with the GIL released and stopped through `cancel` when a signal handler
/// raises.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    cancel: &Cancel,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    interruptible_ticking(py, cancel, &|_| Ok(()), work)
}

/// [`interruptible`], calling `tick` (with the GIL, on the calling thread) at each look at
/// the signals and once more when the work is done: a progress bar's update, which never
/// holds the GIL while runs go on. An error it raises stops the work as Ctrl-C does.
pub fn interruptible_ticking<T: Send>(
    py: Python<'_>,
    cancel: &Cancel,
    tick: &dyn Fn(Python<'_>) -> PyResult<()>,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    std::thread::scope(|scope| {
        let (sender, receiver) = channel();
        scope.spawn(move || {
            // The receiver is gone only when the caller has returned an error already.
            let _ = sender.send(work());
        });
        let mut receiver: Receiver<T> = receiver;
        loop {
            let (back, received) = py.detach(move || {
                let received = receiver.recv_timeout(SIGNAL_CHECK);
                (receiver, received)
            });
            receiver = back;
            match received {
                Ok(done) => return tick(py).map(|()| done),
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(raised) = py.check_signals().and_then(|()| tick(py)) {
                        cancel.cancel();
                        // The scope joins the work, which stops at its next look at `cancel`.
                        return Err(raised);
                    }
                }
                // The work panicked: the scope passes the panic on when it joins.
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(pyo3::exceptions::PyRuntimeError::new_err(
                        "resim: the run ended without a result (a bug: please report it)",
                    ));
                }
            }
        }
    })
}
