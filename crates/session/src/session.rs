//! The session: compile programs into generation-checked slots and run them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use accy_artifact::Artifact;
use accy_executable::{
    prepare_borrowed, run, CpuInfo, Executor, Inline, LoadedArtifact, Scratch, ThreadPool, Weights,
};
use accy_ir::Program;
use accy_lower::{Options, Target};

use crate::handle::{Borrowed, Entry, SlotTable};
use crate::mapping::{Inner, SessionFailure};
use crate::options::SessionOptions;
use crate::{Cause, Descriptor, Error, Handle};

/// The most compiled programs one session holds at a time. Compiling another while all are
/// live returns [`Error::TooManyPrograms`]; release one first.
pub const MAX_PROGRAMS: usize = 64;

/// One compiled, loaded program: immutable, shared by every invoke running it. The
/// descriptors come from the artifact's typed input and output slots, so a program loaded
/// without its `Program` is described the same way.
#[derive(Debug)]
struct Compiled {
    loaded: LoadedArtifact,
    inputs: Vec<Descriptor>,
    outputs: Vec<Descriptor>,
    /// The id of the session that compiled it (see [`Session::program`]).
    session: u64,
}

/// A host creates a session to compile tensor programs for this CPU and run them on memory it
/// supplies. Programs run forward only (no derivatives), with shapes fixed at compile time.
///
/// Thread contract: `Session` is `Send + Sync`. [`Session::invoke`] takes `&self` and may run
/// on many threads at once, for the same handle or different ones; each call needs its own
/// [`Scratch`] and buffers. Compiled code, plans and weights are immutable and shared. Looking
/// a handle up takes no lock, and a call with the same scratch and handle as that scratch's
/// previous call writes no shared memory (see the `handle` module; switching programs on one
/// scratch costs a reference-count update on each), so concurrent callers scale; compile's insertion and release serialise on a mutex, never while
/// a program runs. Releasing a handle while another thread runs it is safe: the running call
/// keeps the program alive until it returns, and later calls get `InvalidHandle`.
///
/// Inside one invocation, a kernel's tiles run on the session's [`Executor`]: by default a
/// [`ThreadPool`] the session owns (sized by [`SessionOptions::threads`]), or one the embedder
/// hands in with [`Session::with_executor`]. Concurrent invocations share it; one that finds
/// it busy runs its tiles on its own thread.
#[derive(Debug)]
pub struct Session {
    cpu: CpuInfo,
    target: Box<dyn Target>,
    options: Options,
    executor: Arc<dyn Executor>,
    table: SlotTable<Compiled, MAX_PROGRAMS>,
    last_cause: Mutex<Option<Cause>>,
    /// Tells this session's programs pinned in a caller's [`Scratch`] from another session's
    /// (see [`Session::program`]); unique in the process.
    id: u64,
}

/// The key a program is pinned under in a scratch: its handle, index and generation.
fn pin_key(handle: Handle) -> u64 {
    (u64::from(handle.index) << 32) | u64::from(handle.generation)
}

/// The next [`Session`] id; ids are never reused, so a scratch that outlived one session
/// cannot hand its program to a later session at the same address.
static NEXT_SESSION_ID: AtomicU64 = AtomicU64::new(1);

/// Buffers per direction whose byte views [`Session::invoke_typed`] keeps on the stack; past
/// it the views take one allocation.
const TYPED_INLINE: usize = 8;

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Session>();
    assert_send_sync::<Handle>();
    assert_send_sync::<Error>();
};

impl Session {
    /// A session generating code for this CPU (see [`SessionOptions::max_tier`]).
    pub fn new() -> Result<Session, Error> {
        Session::with_options(SessionOptions::default())
    }

    /// A session with explicit options, e.g. a lower instruction-set tier for testing. Starts
    /// the session's own thread pool (see [`SessionOptions::threads`]).
    pub fn with_options(options: SessionOptions) -> Result<Session, Error> {
        let threads = options
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
        let executor: Arc<dyn Executor> = if threads <= 1 {
            Arc::new(Inline)
        } else {
            Arc::new(ThreadPool::new(threads).map_err(|e| Inner::Pool(e).into_error())?)
        };
        Session::with_executor(options, executor)
    }

    /// A session whose invocations run their tiles on `executor` (an embedder's own scheduler,
    /// or a [`ThreadPool`] shared by several sessions); [`SessionOptions::threads`] is ignored.
    pub fn with_executor(
        options: SessionOptions,
        executor: Arc<dyn Executor>,
    ) -> Result<Session, Error> {
        let cpu = match options.max_tier {
            Some(tier) => CpuInfo::detect_with_max_tier(tier),
            None => CpuInfo::detect().map_err(|e| Inner::Cpu(e).into_error())?,
        };
        let target = match options.target {
            Some(name) => accy_lower::lookup_name(name, Some(cpu.features())),
            None => accy_lower::lookup_host(cpu.arch(), cpu.features()),
        }
        .map_err(|e| Inner::Lookup(e).into_error())?;
        // Kernels are blocked for this host's caches (recorded in each artifact).
        let blocking = cpu.caches().blocking();
        Ok(Session {
            cpu,
            target,
            options: Options::default()
                .with_reassociate(options.reassociate_float_sums)
                .with_flush_subnormals(options.flush_subnormals)
                .with_caches(blocking),
            executor,
            table: SlotTable::new(),
            last_cause: Mutex::new(None),
            id: NEXT_SESSION_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The name of the code generator in use (e.g. `x64-avx2`).
    pub fn target_name(&self) -> &'static str {
        self.target.name()
    }

    /// The most threads that work on one invocation (the executor's worker count).
    pub fn threads(&self) -> usize {
        self.executor.workers()
    }

    /// Compiles a program given as wire bytes (`docs/wire-format.md`) and loads it into a free
    /// slot. Bad bytes are [`Error::InvalidProgram`] or [`Error::UnsupportedVersion`]; a
    /// program the verifier refuses is `InvalidProgram`; a compile or load failure is
    /// [`Error::CompileFailed`] or [`Error::OutOfMemory`]; a full table is
    /// [`Error::TooManyPrograms`], checked first. The bytes may be freed once this returns:
    /// decoding copies what it keeps. A program with weight parameters needs
    /// [`Session::compile_with_weights`].
    pub fn compile(&self, bytes: &[u8]) -> Result<Handle, Error> {
        self.compile_with_weights(bytes, &Weights::empty())
    }

    /// Like [`Session::compile`], binding the program's weight parameters by name to
    /// `weights`, which many programs may share (they are stored once). A missing or wrongly
    /// sized weight is [`Error::InvalidBuffer`].
    pub fn compile_with_weights(&self, bytes: &[u8], weights: &Weights) -> Result<Handle, Error> {
        if !self.table.has_free() {
            return Err(Error::TooManyPrograms);
        }
        let program = accy_wire::decode(bytes).map_err(|e| self.fail(Inner::Decode(e)))?;
        self.compile_program_with_weights(&program, weights)
    }

    /// Compiles an already decoded [`Program`] (it is verified first); otherwise as
    /// [`Session::compile_with_weights`].
    pub fn compile_program_with_weights(
        &self,
        program: &Program,
        weights: &Weights,
    ) -> Result<Handle, Error> {
        if !self.table.has_free() {
            return Err(Error::TooManyPrograms);
        }
        let loaded = self
            .build(program, weights)
            .map_err(|inner| self.fail(inner))?;
        self.insert(loaded)
    }

    /// Compiles a program given as wire bytes for this session's target and options, as
    /// [`Session::compile`] would, and returns the compiled artifact as bytes instead of
    /// loading it (no slot is used). Write the bytes to a file and load them, on this or another
    /// machine with the same architecture and CPU features, with [`Session::load_artifact`]:
    /// no compile happens there. The bytes hold the code, constants and plans, and name the
    /// weights without holding them. Errors are those of [`Session::compile`].
    pub fn compile_artifact(&self, bytes: &[u8]) -> Result<Vec<u8>, Error> {
        let program = accy_wire::decode(bytes).map_err(|e| self.fail(Inner::Decode(e)))?;
        self.compile_program_artifact(&program)
    }

    /// [`Session::compile_artifact`] for an already decoded [`Program`].
    pub fn compile_program_artifact(&self, program: &Program) -> Result<Vec<u8>, Error> {
        let artifact = self
            .compile_to_artifact(program)
            .map_err(|inner| self.fail(inner))?;
        artifact
            .to_bytes()
            .map_err(|e| self.fail(Inner::Artifact(e)))
    }

    /// Loads an artifact written by [`Session::compile_artifact`] into a free slot, without
    /// compiling, and returns its handle: from then on it is used exactly like a compiled
    /// program. A program with weight parameters needs
    /// [`Session::load_artifact_with_weights`].
    ///
    /// Before any code is mapped, the bytes are checked (magic, format version, checksum, every
    /// length and section) and the artifact validated, then its architecture and CPU features
    /// are compared with this session's (the host's, masked by
    /// [`SessionOptions::max_tier`]). Errors: a full table is [`Error::TooManyPrograms`]; a
    /// newer format is [`Error::UnsupportedVersion`]; damaged or malformed bytes, and an
    /// artifact that fails validation, are [`Error::InvalidProgram`]; code for another
    /// architecture or needing CPU features this session may not use is
    /// [`Error::CompileFailed`], whose cause names the architecture or the missing features;
    /// mapping failures are [`Error::OutOfMemory`] or `CompileFailed`. The bytes may be freed
    /// once this returns.
    ///
    /// The code needs no relocation: it refers to no absolute address (see
    /// `accy_artifact::serial`), so it runs wherever it is mapped.
    ///
    /// # Safety
    ///
    /// The bytes contain machine code that will run in this process. The checks above catch
    /// damage and version skew, and validation proves the launch plan stays inside its
    /// buffers, but nothing can prove what the code itself does: the caller promises that
    /// `bytes` were written by [`Session::compile_artifact`] of this accy version (or a copy
    /// of them that nobody could tamper with). Loading bytes from an untrusted source is
    /// running an untrusted program. (wasmtime's `Module::deserialize` is unsafe for the same
    /// reason.)
    pub unsafe fn load_artifact(&self, bytes: &[u8]) -> Result<Handle, Error> {
        // SAFETY: the caller keeps this function's contract, which is the callee's.
        unsafe { self.load_artifact_with_weights(bytes, &Weights::empty()) }
    }

    /// [`Session::load_artifact`], binding the artifact's weights by name to `weights`
    /// exactly as [`Session::compile_with_weights`] does (a missing or wrongly sized weight is
    /// [`Error::InvalidBuffer`]). Weights are never part of an artifact.
    ///
    /// # Safety
    ///
    /// As for [`Session::load_artifact`].
    pub unsafe fn load_artifact_with_weights(
        &self,
        bytes: &[u8],
        weights: &Weights,
    ) -> Result<Handle, Error> {
        if !self.table.has_free() {
            return Err(Error::TooManyPrograms);
        }
        let validated =
            Artifact::from_bytes_validated(bytes).map_err(|e| self.fail(Inner::Artifact(e)))?;
        // SAFETY: `from_bytes_validated` validated the artifact (its summary comes with it),
        // and the caller promises its code came from `accy_lower::compile` (this function's
        // contract), whose kernels keep the dispatch ABI for the launch plan stored beside
        // them.
        let loaded = unsafe { LoadedArtifact::load_validated(validated, &self.cpu, weights) }
            .map_err(|e| self.fail(Inner::Load(e)))?;
        self.insert(loaded)
    }

    /// Puts a loaded program in a free slot, with its descriptors; returns its handle.
    fn insert(&self, loaded: LoadedArtifact) -> Result<Handle, Error> {
        let (inputs, outputs) =
            Descriptor::of_artifact(&loaded).map_err(|e| self.fail(Inner::Session(e)))?;
        let compiled = Compiled {
            loaded,
            inputs,
            outputs,
            session: self.id,
        };
        self.table
            .insert(compiled)
            .map_err(|_| Error::TooManyPrograms)
    }

    /// Compiles `program` for this session's target and options (verifying it first; the
    /// verifier's refusal maps to `InvalidProgram`).
    pub(crate) fn compile_to_artifact(&self, program: &Program) -> Result<Artifact, Inner> {
        accy_lower::compile(program, self.target.as_ref(), &self.options).map_err(Inner::Compile)
    }

    /// Loads an artifact this session compiled, binding its weight slots to `weights`; the
    /// artifact's parts move into the loaded program.
    pub(crate) fn map_artifact(
        &self,
        artifact: Artifact,
        weights: &Weights,
    ) -> Result<LoadedArtifact, Inner> {
        // SAFETY: every artifact handed here was produced by `accy_lower::compile` (in
        // `compile_to_artifact`), whose emitters generate kernels that keep the dispatch ABI for
        // the launch plan it built.
        unsafe { LoadedArtifact::load_owned_with_weights(artifact, &self.cpu, weights) }
            .map_err(Inner::Load)
    }

    /// [`Session::compile_to_artifact`] then [`Session::map_artifact`].
    pub(crate) fn build(
        &self,
        program: &Program,
        weights: &Weights,
    ) -> Result<LoadedArtifact, Inner> {
        self.map_artifact(self.compile_to_artifact(program)?, weights)
    }

    /// The executor invocations run their tiles on.
    pub(crate) fn executor(&self) -> &Arc<dyn Executor> {
        &self.executor
    }

    /// Frees the program `handle` names. Every copy of the handle is refused from then on
    /// (the slot's generation moves on). A stale or foreign handle is [`Error::InvalidHandle`].
    /// A [`Scratch`] whose last call ran the program keeps it (code, constants and its share
    /// of the weights) until the scratch runs another program or is dropped; the slot itself
    /// is free at once.
    pub fn release(&self, handle: Handle) -> Result<(), Error> {
        self.table
            .remove(handle)
            .map(drop)
            .ok_or(Error::InvalidHandle {
                index: handle.index,
                generation: handle.generation,
            })
    }

    /// Descriptors of the program's inputs, in input order.
    pub fn inputs(&self, handle: Handle) -> Result<Vec<Descriptor>, Error> {
        Ok(compiled(&self.lookup(handle)?, handle)?.inputs.clone())
    }

    /// Descriptors of the program's outputs, in output order.
    pub fn outputs(&self, handle: Handle) -> Result<Vec<Descriptor>, Error> {
        Ok(compiled(&self.lookup(handle)?, handle)?.outputs.clone())
    }

    /// Number of live programs.
    pub fn live_programs(&self) -> usize {
        self.table.live()
    }

    /// Runs the program on caller buffers: `inputs` and `outputs` in the order of
    /// [`Session::inputs`] and [`Session::outputs`]. Each buffer must have exactly the
    /// descriptor's byte size and at least its alignment, and no output may share a byte with
    /// an input or another output; otherwise [`Error::InvalidBuffer`] (a wrong buffer count is
    /// returned directly, without touching [`Session::last_cause`]). Inputs are only read,
    /// never written, even for a program that donates an input. `scratch` is reusable
    /// memory for this call: pass the same one to later calls and invoke allocates nothing.
    /// Generated code runs on the calling thread and uses up to
    /// `accy_artifact::abi::MAX_KERNEL_STACK` (64 KiB) of its stack, touching it page by page.
    pub fn invoke(
        &self,
        handle: Handle,
        scratch: &mut Scratch,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<(), Error> {
        self.with_program(handle, scratch, |compiled, scratch| {
            self.invoke_compiled(compiled, scratch, inputs, outputs)
        })
    }

    /// Runs `call` on the program `handle` names ([`Session::program`]), then pins it in
    /// `scratch` for the next call, whatever `call` returned.
    #[inline]
    fn with_program(
        &self,
        handle: Handle,
        scratch: &mut Scratch,
        call: impl FnOnce(&Compiled, &mut Scratch) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let program = self.program(handle, scratch)?;
        // A fresh `Ok(())` on success: carrying the call's result across `pin` made it
        // round-trip through the stack, a store-forwarding stall on every call.
        match call(&program.value, scratch) {
            Ok(()) => {
                self.pin(handle, scratch, program);
                Ok(())
            }
            Err(e) => {
                self.pin(handle, scratch, program);
                Err(e)
            }
        }
    }

    /// The program `handle` names, taken from `scratch` when the caller's last call ran it
    /// and the handle is still live (one atomic load: the invoke path then writes no memory
    /// another caller reads), else looked up in the table. Give it back with
    /// [`Session::pin`] after the call, so the next one finds it.
    fn program(
        &self,
        handle: Handle,
        scratch: &mut Scratch,
    ) -> Result<Arc<Entry<Compiled>>, Error> {
        if let Some(pinned) = scratch.take_pinned(self.id, pin_key(handle)) {
            if self.table.is_live(handle) {
                if let Ok(entry) = pinned.downcast::<Entry<Compiled>>() {
                    // The scratch is the caller's, and anyone may pin anything in it: use the
                    // value only if it is this session's program for this very handle.
                    if entry.handle() == handle && entry.value.session == self.id {
                        return Ok(entry);
                    }
                }
            }
        }
        self.table.get_owned(handle).ok_or(Error::InvalidHandle {
            index: handle.index,
            generation: handle.generation,
        })
    }

    /// Keeps `program` in `scratch` for the caller's next call with `handle`. The scratch
    /// holds it until it runs another program or is dropped, so a released program's memory
    /// may outlive `release` by that long.
    fn pin(&self, handle: Handle, scratch: &mut Scratch, program: Arc<Entry<Compiled>>) {
        scratch.pin(self.id, pin_key(handle), program);
    }

    /// [`Session::invoke`] of a program already looked up.
    fn invoke_compiled(
        &self,
        compiled: &Compiled,
        scratch: &mut Scratch,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<(), Error> {
        for (what, expected, actual) in [
            ("input", compiled.inputs.len(), inputs.len()),
            ("output", compiled.outputs.len(), outputs.len()),
        ] {
            if expected != actual {
                let failure = SessionFailure::Count {
                    what,
                    expected,
                    actual,
                };
                return Err(Error::InvalidBuffer(Arc::new(failure)));
            }
        }
        let bindings = prepare_borrowed(
            &compiled.loaded,
            inputs,
            outputs,
            scratch,
            self.executor.as_ref(),
        )
        .map_err(|e| self.fail(Inner::Bind(e)))?;
        run(bindings).map_err(|e| self.fail(Inner::Launch(e)))
    }

    /// [`Session::invoke`] over typed slices (`&[f32]`, `&mut [i64]`, …): each slice is viewed
    /// as its bytes, so its element type must match the descriptor's dtype in size. With up to
    /// 8 inputs and 8 outputs it allocates nothing beyond what [`Session::invoke`] does.
    pub fn invoke_typed<I: bytemuck::Pod, O: bytemuck::Pod>(
        &self,
        handle: Handle,
        scratch: &mut Scratch,
        inputs: &[&[I]],
        outputs: &mut [&mut [O]],
    ) -> Result<(), Error> {
        self.with_program(handle, scratch, |compiled, scratch| {
            self.invoke_typed_compiled(compiled, scratch, inputs, outputs)
        })
    }

    /// [`Session::invoke_typed`] of a program already looked up.
    fn invoke_typed_compiled<I: bytemuck::Pod, O: bytemuck::Pod>(
        &self,
        compiled: &Compiled,
        scratch: &mut Scratch,
        inputs: &[&[I]],
        outputs: &mut [&mut [O]],
    ) -> Result<(), Error> {
        let input_lens = inputs.iter().map(|s| s.len());
        let output_lens = outputs.iter().map(|s| s.len());
        check_typed("input", &compiled.inputs, input_lens, size_of::<I>())
            .and_then(|()| check_typed("output", &compiled.outputs, output_lens, size_of::<O>()))
            .map_err(|failure| match failure {
                // A count mismatch is returned directly, as in `invoke`.
                SessionFailure::Count { .. } => Error::InvalidBuffer(Arc::new(failure)),
                other => self.fail(Inner::Session(other)),
            })?;
        // Byte views of up to `TYPED_INLINE` buffers live in arrays on the stack, filled in
        // place (collecting into a returned container costs a copy per call on this hot path);
        // more buffers than that take one allocation.
        let (input_count, output_count) = (inputs.len(), outputs.len());
        if input_count <= TYPED_INLINE && output_count <= TYPED_INLINE {
            let mut input_bytes: [&[u8]; TYPED_INLINE] = [&[]; TYPED_INLINE];
            for (bytes, s) in input_bytes.iter_mut().zip(inputs) {
                *bytes = bytemuck::cast_slice(s);
            }
            let mut output_bytes: [&mut [u8]; TYPED_INLINE] = Default::default();
            for (bytes, s) in output_bytes.iter_mut().zip(outputs.iter_mut()) {
                *bytes = bytemuck::cast_slice_mut(s);
            }
            return self.invoke_compiled(
                compiled,
                scratch,
                &input_bytes[..input_count],
                &mut output_bytes[..output_count],
            );
        }
        let input_bytes: Vec<&[u8]> = inputs.iter().map(|s| bytemuck::cast_slice(s)).collect();
        let mut output_bytes: Vec<&mut [u8]> = outputs
            .iter_mut()
            .map(|s| bytemuck::cast_slice_mut(s))
            .collect();
        self.invoke_compiled(compiled, scratch, &input_bytes, &mut output_bytes)
    }

    /// The inner error behind the most recent failure that went through the session's error
    /// mapping (decode, verify, compile, load, buffer binding, launch), on any thread. For
    /// hosts that see only status codes; with concurrent calls "most recent" is whichever
    /// failure recorded last, so a Rust caller should read the returned [`Error`]'s
    /// `source()` instead, which is always this call's own cause. Failures returned directly —
    /// a full table, a stale handle, a buffer-count mismatch — leave it unchanged.
    pub fn last_cause(&self) -> Option<Cause> {
        self.last_cause
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn fail(&self, inner: Inner) -> Error {
        let error = inner.into_error();
        if let Some(cause) = error.cause() {
            *self
                .last_cause
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(cause.clone());
        }
        error
    }

    fn lookup(&self, handle: Handle) -> Result<Borrowed<Compiled>, Error> {
        self.table.get(handle).ok_or(Error::InvalidHandle {
            index: handle.index,
            generation: handle.generation,
        })
    }
}

/// The program a successful lookup of `handle` borrowed (`lookup` returns only occupied slots,
/// so the error is never seen).
fn compiled(entry: &Borrowed<Compiled>, handle: Handle) -> Result<&Compiled, Error> {
    entry
        .as_ref()
        .map(|e| &e.value)
        .ok_or(Error::InvalidHandle {
            index: handle.index,
            generation: handle.generation,
        })
}

/// Checks typed buffers (`element`-byte elements) against `descriptors`: count, element size
/// and exact byte size.
pub(crate) fn check_typed(
    what: &'static str,
    descriptors: &[Descriptor],
    lens: impl ExactSizeIterator<Item = usize>,
    element: usize,
) -> Result<(), SessionFailure> {
    if lens.len() != descriptors.len() {
        return Err(SessionFailure::Count {
            what,
            expected: descriptors.len(),
            actual: lens.len(),
        });
    }
    for (index, (len, d)) in lens.zip(descriptors).enumerate() {
        let actual = len.saturating_mul(element);
        if element != d.dtype.size_bytes() as usize || actual != d.byte_size {
            return Err(SessionFailure::Typed {
                what,
                index,
                element,
                actual,
                expected: d.byte_size,
                dtype: d.dtype,
            });
        }
    }
    Ok(())
}
