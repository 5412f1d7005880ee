//! CUDA for the GPU-driven queues (feature `gpu`): cudarc 0.19, loading libcuda and NVRTC at
//! run time, so nothing of CUDA is needed to build.
//!
//! cudarc panics when a library it needs is missing, so [`probe`] looks for them first (with
//! dlopen, as cudarc would) and every entry point here goes through it: without a driver or a
//! GPU the answer is a [`GpuError`], never a panic.
//!
//! Provisional until run on a GPU machine: this module builds and its probe is tested here;
//! the kernel path (`tests/gpu_cuda.rs`) runs only where a GPU is (docs/sources.md section 10).

use std::sync::Arc;

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
pub use cudarc::driver::{CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::CompileOptions;

use super::GpuError;
use crate::mem::DmaBuf;

/// The CUDA driver library (docs/sources.md section 10: dlopen it before the first cudarc call).
const DRIVER_LIBS: [&str; 2] = ["libcuda.so.1", "libcuda.so"];
/// NVRTC, newest first (CUDA 13 on the GPU machine).
const NVRTC_LIBS: [&str; 3] = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

/// What [`probe`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    /// GPUs the driver sees.
    pub devices: usize,
    /// The first one's name.
    pub name: String,
    /// Its compute capability (major, minor).
    pub compute_capability: (i32, i32),
}

fn loadable(names: &[&str]) -> Result<(), String> {
    let mut tried = Vec::new();
    for &n in names {
        // SAFETY: loading the CUDA driver or NVRTC runs their initialisers, which is what
        // cudarc would do on its first call; nothing else is called here.
        match unsafe { libloading::Library::new(n) } {
            Ok(_) => return Ok(()),
            Err(e) => tried.push(format!("{n}: {e}")),
        }
    }
    Err(tried.join("; "))
}

/// Looks for the CUDA driver, NVRTC and a GPU, in that order.
///
/// # Errors
/// [`GpuError::NoDriver`] without libcuda or NVRTC, [`GpuError::NoDevice`] without a GPU.
pub fn probe() -> Result<GpuInfo, GpuError> {
    loadable(&DRIVER_LIBS).map_err(GpuError::NoDriver)?;
    loadable(&NVRTC_LIBS).map_err(|e| GpuError::NoDriver(format!("NVRTC: {e}")))?;
    let n = CudaContext::device_count().map_err(|e| GpuError::NoDevice(e.to_string()))?;
    if n < 1 {
        return Err(GpuError::NoDevice("the driver sees no GPU".into()));
    }
    let ctx = CudaContext::new(0).map_err(|e| GpuError::NoDevice(e.to_string()))?;
    Ok(GpuInfo {
        devices: n as usize,
        name: ctx.name().map_err(cuda)?,
        compute_capability: ctx.compute_capability().map_err(cuda)?,
    })
}

fn cuda(e: impl std::fmt::Display) -> GpuError {
    GpuError::Cuda(e.to_string())
}

/// One GPU: its context and stream.
#[derive(Debug)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

impl Gpu {
    /// Opens GPU `ordinal` (after [`probe`]).
    ///
    /// # Errors
    /// As [`probe`], or the GPU cannot be opened.
    pub fn open(ordinal: usize) -> Result<Gpu, GpuError> {
        probe()?;
        let ctx = CudaContext::new(ordinal).map_err(|e| GpuError::NoDevice(e.to_string()))?;
        let stream = ctx.default_stream();
        Ok(Gpu { ctx, stream })
    }

    /// The context (cudarc), for what this module does not wrap.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream kernels are launched on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Makes host memory reachable from kernels at its own address (unified addressing):
    /// `cuMemHostRegister` with DEVICEMAP | PORTABLE (IOMEMORY too for a device's register
    /// page, `io`). The registration ends when the returned value is dropped.
    ///
    /// # Errors
    /// CUDA refused, or the GPU would see the memory at another address.
    pub fn register_host(
        &self,
        addr: u64,
        len: usize,
        io: bool,
    ) -> Result<HostRegistration, GpuError> {
        use cudarc::driver::sys;
        self.ctx.bind_to_thread().map_err(cuda)?;
        let mut flags = sys::CU_MEMHOSTREGISTER_DEVICEMAP | sys::CU_MEMHOSTREGISTER_PORTABLE;
        if io {
            flags |= sys::CU_MEMHOSTREGISTER_IOMEMORY;
        }
        let p = addr as *mut std::ffi::c_void;
        // SAFETY: `addr .. addr + len` is a live mapping the caller keeps until the returned
        // registration is dropped (it unregisters first).
        let r = unsafe { sys::cuMemHostRegister_v2(p, len, flags) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(GpuError::Cuda(format!(
                "cuMemHostRegister({addr:#x}, {len}): {r:?}"
            )));
        }
        let reg = HostRegistration {
            ctx: Arc::clone(&self.ctx),
            addr,
        };
        let mut dptr: sys::CUdeviceptr = 0;
        // SAFETY: `p` was registered just above.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, p, 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(GpuError::Cuda(format!("cuMemHostGetDevicePointer: {r:?}")));
        }
        if dptr != addr {
            return Err(GpuError::Cuda(format!(
                "the GPU sees host {addr:#x} at {dptr:#x}: no unified addressing"
            )));
        }
        Ok(reg)
    }

    /// Registers a driver buffer ([`Gpu::register_host`]).
    ///
    /// # Errors
    /// As [`Gpu::register_host`].
    pub fn register_buf(&self, buf: &Arc<DmaBuf>) -> Result<HostRegistration, GpuError> {
        self.register_host(buf.addr(), buf.len(), false)
    }

    /// Compiles CUDA source `src` with NVRTC, the GPUNetIO headers on its include path, for
    /// this GPU, and loads it.
    ///
    /// # Errors
    /// NVRTC's log, or the module cannot be loaded.
    pub fn compile(&self, src: &str) -> Result<Arc<CudaModule>, GpuError> {
        let dir = std::env::temp_dir().join(format!("mlx5-dpa-gpunetio-{}", std::process::id()));
        super::write_headers(&dir).map_err(|e| GpuError::Cuda(format!("headers: {e}")))?;
        let (major, minor) = self.ctx.compute_capability().map_err(cuda)?;
        let opts = CompileOptions {
            include_paths: vec![dir.display().to_string()],
            options: vec![
                format!("--gpu-architecture=sm_{major}{minor}"),
                "--std=c++17".into(),
            ],
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(src, opts).map_err(cuda)?;
        let _ = std::fs::remove_dir_all(&dir);
        self.ctx.load_module(ptx).map_err(cuda)
    }

    /// Function `name` of a compiled module.
    ///
    /// # Errors
    /// No such function.
    pub fn function(&self, module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction, GpuError> {
        module.load_function(name).map_err(cuda)
    }
}

impl Gpu {
    /// Launches `f` on [`Gpu::stream`] with `blocks` blocks of `threads` threads, its
    /// parameters all `uint64_t` and given in `args`.
    ///
    /// # Safety
    /// `f` takes exactly `args.len()` parameters, each a `uint64_t`; every address among them
    /// is memory the GPU may reach (registered, [`Gpu::register_host`]) and stays so until the
    /// stream is synchronised.
    ///
    /// # Errors
    /// CUDA refused the launch.
    pub unsafe fn launch(
        &self,
        f: &CudaFunction,
        blocks: u32,
        threads: u32,
        args: &[u64],
    ) -> Result<(), GpuError> {
        let mut b = self.stream.launch_builder(f);
        for a in args {
            b.arg(a);
        }
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the caller's contract above is cudarc's for a launch.
        unsafe { b.launch(cfg) }.map_err(cuda)?;
        Ok(())
    }

    /// Waits for everything launched on [`Gpu::stream`].
    ///
    /// # Errors
    /// A kernel failed.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream.synchronize().map_err(cuda)
    }
}

/// Host memory registered with CUDA ([`Gpu::register_host`]); unregistered on drop.
#[derive(Debug)]
pub struct HostRegistration {
    ctx: Arc<CudaContext>,
    addr: u64,
}

impl Drop for HostRegistration {
    fn drop(&mut self) {
        use cudarc::driver::sys;
        let _ = self.ctx.bind_to_thread();
        // SAFETY: `addr` was registered by `register_host` and not yet unregistered.
        let _ = unsafe { sys::cuMemHostUnregister(self.addr as *mut std::ffi::c_void) };
    }
}
