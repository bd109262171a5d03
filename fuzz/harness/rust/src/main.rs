//! safetensors-harness: the reference safetensors crate (0.8.0, the Rust
//! core of the Python wheel) behind stcheck's two loader protocols
//! (`fuzz/README.md`, "Native speed: the persistent protocol and AFL++").
//!
//! Strategy: `load` is the loader under test.  It calls
//! `SafeTensors::deserialize` on the whole file, as the wheel's
//! `safetensors.deserialize()` does, then walks every tensor twice
//! (`tensors()` and `tensor(name)`) so that the data slicing runs too.  An
//! `Err` from the crate is a clean rejection.  Nothing else is: a panic
//! aborts the process (`panic = "abort"` in Cargo.toml), which both
//! protocols count as a crash, and no panic is ever caught.
//!
//!   safetensors-harness --persistent   frames on stdin (a u32 little-endian
//!                                      length, then the bytes); one line per
//!                                      frame on stdout: `accept` or
//!                                      `reject <Class>: <message>`; the end
//!                                      of stdin ends the session (exit 0),
//!                                      the end of stdin inside a frame is
//!                                      an error (exit 2).
//!   safetensors-harness FILE           exit 0 accepts; exit 1 rejects, the
//!                                      reason on stderr; exit 2 is a usage
//!                                      error or a file it cannot read.
//!
//! `<Class>` is the variant of `SafeTensorError`, the name stcheck's judge
//! gives the wheel's message (`InvalidOffset`, `HeaderTooSmall`, ...).
//!
//! Built with the cargo feature `afl` (and linked with AFL++'s
//! `afl-compiler-rt.o`, see `build.sh`), FILE runs in AFL++'s persistent mode,
//! as `fuzz/harness/loader_harness.c` does with `__AFL_LOOP`: the loader runs
//! on the file afl-fuzz rewrites, up to `afl::ITERATIONS` inputs per
//! process; a rejection returns normally, so afl-fuzz sees only crashes and
//! hangs, and the exit status still carries the last verdict for a replay.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::FromRawFd;
use std::process::ExitCode;

use safetensors::{SafeTensorError, SafeTensors};

/// The longest reason written on an answer line (as the C harness).
const REASON_LIMIT: usize = 200;

/// Load `data` as the wheel's `deserialize()` does; `Err` is a rejection.
///
/// On success every tensor is sliced out and checked against its header
/// entry; a mismatch is a bug of the crate and panics (a crash).
fn load(data: &[u8]) -> Result<(), SafeTensorError> {
    let st = SafeTensors::deserialize(data)?;
    let views = st.tensors();
    assert_eq!(views.len(), st.len(), "tensors() and len() disagree");
    for (name, view) in &views {
        let again = st
            .tensor(name)
            .expect("a name listed by tensors() is not found by tensor()");
        assert!(
            std::ptr::eq(view.data(), again.data())
                && view.shape() == again.shape()
                && view.dtype() == again.dtype(),
            "tensors() and tensor({name:?}) return different views"
        );
        // In the crate's order (elements, then bits), so that a zero
        // dimension after a large one cannot overflow here and not there.
        let bits = view
            .shape()
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .and_then(|n| n.checked_mul(view.dtype().bitsize()))
            .expect("an accepted tensor's size overflows");
        assert_eq!(
            view.data().len() * 8,
            bits,
            "tensor {name:?}: the data does not match shape and dtype"
        );
        std::hint::black_box(view.data());
    }
    Ok(())
}

/// `<Class>: <message>`: the error's variant (the class stcheck's judge and
/// the wheel's messages name) and its Display text.
fn reason(error: &SafeTensorError) -> String {
    let debug = format!("{error:?}");
    let class: String = debug
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    format!("{class}: {error}")
}

/// One line: control characters become spaces, at most `REASON_LIMIT` chars.
fn one_line(text: &str) -> String {
    text.chars()
        .take(REASON_LIMIT)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

// --- the persistent frame protocol ---------------------------------------

extern "C" {
    fn dup(fd: i32) -> i32;
    fn dup2(old: i32, new: i32) -> i32;
}

/// The protocol's stdout; fd 1 itself then goes to stderr, so that nothing
/// else written to stdout can break the protocol.
fn protocol_stdout() -> io::Result<File> {
    // SAFETY: plain POSIX calls on the process's own descriptors; the new
    // descriptor is owned by the File and by nothing else.
    unsafe {
        let fd = dup(1);
        if fd < 0 || dup2(2, 1) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(File::from_raw_fd(fd))
    }
}

/// The next frame's length: `None` at the end of the session (EOF on a
/// frame boundary); an error when the stream ends inside the prefix.
fn read_prefix(input: &mut impl Read) -> io::Result<Option<usize>> {
    let mut prefix = [0u8; 4];
    let mut got = 0;
    while got < prefix.len() {
        match input.read(&mut prefix[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "truncated frame length",
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(u32::from_le_bytes(prefix) as usize))
}

fn serve() -> io::Result<()> {
    let mut out = protocol_stdout()?;
    let mut input = io::stdin().lock();
    let mut frame = Vec::new();
    while let Some(len) = read_prefix(&mut input)? {
        frame.resize(len, 0);
        input.read_exact(&mut frame)?;
        let answer = match load(&frame) {
            Ok(()) => "accept\n".to_owned(),
            Err(e) => format!("reject {}\n", one_line(&reason(&e))),
        };
        out.write_all(answer.as_bytes())?;
    }
    Ok(())
}

// --- the exit protocol, AFL++'s persistent mode with feature `afl` -------

enum Verdict {
    Accept,
    Reject(String),
    Unreadable(String),
}

fn judge_file(path: &str) -> Verdict {
    match std::fs::read(path) {
        Err(e) => Verdict::Unreadable(format!("cannot read {path}: {e}")),
        Ok(data) => match load(&data) {
            Ok(()) => Verdict::Accept,
            Err(e) => Verdict::Reject(reason(&e)),
        },
    }
}

#[cfg(feature = "afl")]
mod afl {
    //! AFL++'s persistent mode without afl-cc: the runtime's two entry
    //! points, and the two strings afl-fuzz looks for in the binary to
    //! switch on persistent mode and the deferred fork server (afl-cc's
    //! `__AFL_LOOP` and `__AFL_INIT` plant the same ones).

    /// Inputs per process before afl-fuzz starts a fresh one.
    pub const ITERATIONS: u32 = 10_000;

    #[used]
    static PERSISTENT_SIGNATURE: [u8; 23] = *b"##SIG_AFL_PERSISTENT##\0";
    #[used]
    static DEFERRED_SIGNATURE: [u8; 26] = *b"##SIG_AFL_DEFER_FORKSRV##\0";

    extern "C" {
        fn __afl_manual_init();
        fn __afl_persistent_loop(max_cnt: u32) -> i32;
    }

    /// Run `one` once per input afl-fuzz gives (once when run by hand, as
    /// the runtime's loop returns 1 then 0 outside afl-fuzz); the last
    /// result, or `None` if the loop never ran.
    pub fn each<T>(mut one: impl FnMut() -> T) -> Option<T> {
        // The reads keep both strings referenced, whatever the linker drops.
        std::hint::black_box((&PERSISTENT_SIGNATURE, &DEFERRED_SIGNATURE));
        // SAFETY: the AFL++ runtime linked in by build.sh defines both; they
        // take no pointers of ours.
        unsafe { __afl_manual_init() };
        let mut last = None;
        while unsafe { __afl_persistent_loop(ITERATIONS) } != 0 {
            last = Some(one());
        }
        last
    }
}

#[cfg(not(feature = "afl"))]
mod afl {
    /// Without AFL++: `one` runs once.
    #[allow(clippy::unnecessary_wraps)] // the signature of the AFL++ version
    pub fn each<T>(one: impl FnOnce() -> T) -> Option<T> {
        Some(one())
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.as_slice() {
        [_, flag] if flag == "--persistent" => match serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("safetensors-harness: {e}");
                ExitCode::from(2)
            }
        },
        [_, path] if !path.starts_with("--") => match afl::each(|| judge_file(path)) {
            Some(Verdict::Accept) => ExitCode::SUCCESS,
            Some(Verdict::Reject(why)) => {
                eprintln!("rejected: {why}");
                ExitCode::from(1)
            }
            Some(Verdict::Unreadable(why)) => {
                eprintln!("safetensors-harness: {why}");
                ExitCode::from(2)
            }
            None => ExitCode::from(2),
        },
        _ => {
            let me = args.first().map_or("safetensors-harness", String::as_str);
            eprintln!("usage: {me} FILE | --persistent");
            ExitCode::from(2)
        }
    }
}
