/*
 * mlx5-dpa: a CPU runtime for CUDA kernels, so that kernel sources (ours, and NVIDIA's public
 * GPUNetIO examples, unmodified) run on CPU threads against the device model where there is
 * no GPU. Built as host C++ (g++ -std=c++17) with this directory first on the include path and
 * this header forced in (`-include cuda_runtime.h`, as nvcc includes it implicitly).
 *
 * What it gives: the CUDA qualifiers (empty; `__shared__` is `static`), `dim3`, `threadIdx`,
 * `blockIdx`, `blockDim`, `gridDim` (per CPU thread), `__syncthreads` (a barrier of the block),
 * the runtime's error and synchronisation calls, and kernel launches: a launch runs the
 * blocks one after another, each block's threads as CPU threads, and returns when the grid
 * is done (as if the stream were synchronised). Launches of the same kernel are serialised,
 * so a block's `__shared__` variables (the kernel's statics) belong to one block at a time.
 *
 * The launch syntax `kernel<<<grid, block, shmem, stream>>>(args)` is not C++: nvcc compiles it
 * into a runtime call, and so does this project's test (tests/driver/gpu_public.rs), which
 * rewrites each launch, in a scratch copy, into `mlx5_cpu_cuda::launch(kernel, grid, block,
 * shmem, stream)(args)`. Nothing else of a kernel source is changed.
 *
 * Not here: warp-level intrinsics (shuffles, votes, `__syncwarp`): the GPUNetIO headers' host
 * build has no warp paths, and a kernel that calls one does not compile. Atomics and fences
 * come from the GPUNetIO headers' host build (doca_gpunetio_eth_def.h).
 */
#ifndef MLX5_DPA_CPU_CUDA_RUNTIME_H
#define MLX5_DPA_CPU_CUDA_RUNTIME_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#define __host__
#define __device__
#define __global__
#define __shared__ static
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))

struct dim3 {
	unsigned x, y, z;
	dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

struct uint3 {
	unsigned x, y, z;
};

typedef struct CUstream_st *cudaStream_t;
typedef enum cudaError {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorLaunchOutOfResources = 701,
} cudaError_t;

namespace mlx5_cpu_cuda {

/* The threads of a block meet here (__syncthreads). */
class Barrier {
public:
	explicit Barrier(unsigned n) : n_(n) {}
	void wait()
	{
		std::unique_lock<std::mutex> l(m_);
		unsigned gen = gen_;
		if (++arrived_ == n_) {
			arrived_ = 0;
			gen_++;
			cv_.notify_all();
			return;
		}
		cv_.wait(l, [&] { return gen_ != gen; });
	}

private:
	std::mutex m_;
	std::condition_variable cv_;
	unsigned n_, arrived_ = 0, gen_ = 0;
};

/* What a CPU thread running a CUDA thread knows of itself. */
struct Ctx {
	uint3 thread;
	uint3 block;
	dim3 block_dim;
	dim3 grid_dim;
	Barrier *barrier;
};

inline thread_local Ctx ctx = {{0, 0, 0}, {0, 0, 0}, dim3(), dim3(), nullptr};
inline thread_local cudaError_t last_error = cudaSuccess;

/* One lock per kernel: its launches run one at a time. */
inline std::mutex &kernel_lock(const void *kernel)
{
	static std::mutex m;
	static std::map<const void *, std::unique_ptr<std::mutex>> locks;
	std::lock_guard<std::mutex> g(m);
	std::unique_ptr<std::mutex> &l = locks[kernel];
	if (!l)
		l.reset(new std::mutex);
	return *l;
}

/* The most threads a block may have (CUDA's limit). */
constexpr unsigned max_block_threads = 1024;

template <typename... P>
struct Launch {
	void (*kernel)(P...);
	dim3 grid, block;

	template <typename... A>
	void operator()(A &&...a) const
	{
		unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
		unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
		if (!kernel || threads == 0 || threads > max_block_threads || blocks == 0 || blocks > 65535) {
			last_error = cudaErrorInvalidValue;
			return;
		}
		const std::tuple<P...> args(static_cast<P>(std::forward<A>(a))...);
		std::lock_guard<std::mutex> serial(kernel_lock((const void *)kernel));
		for (unsigned bz = 0; bz < grid.z; bz++)
			for (unsigned by = 0; by < grid.y; by++)
				for (unsigned bx = 0; bx < grid.x; bx++)
					if (!run_block(args, uint3{bx, by, bz}, (unsigned)threads)) {
						last_error = cudaErrorLaunchOutOfResources;
						return;
					}
	}

private:
	/* Runs one block; false when its threads could not all be started (then none ran). */
	bool run_block(const std::tuple<P...> &args, uint3 b, unsigned threads) const
	{
		Barrier barrier(threads);
		std::mutex m;
		std::condition_variable cv;
		int gate = 0; /* 0 wait, 1 run, -1 give up */
		std::vector<std::thread> ts;
		auto body = [&](uint3 t) {
			{
				std::unique_lock<std::mutex> l(m);
				cv.wait(l, [&] { return gate != 0; });
				if (gate < 0)
					return;
			}
			ctx = Ctx{t, b, block, grid, &barrier};
			std::apply(kernel, args);
		};
		bool started = true;
		try {
			ts.reserve(threads);
			for (unsigned tz = 0; tz < block.z; tz++)
				for (unsigned ty = 0; ty < block.y; ty++)
					for (unsigned tx = 0; tx < block.x; tx++)
						ts.emplace_back(body, uint3{tx, ty, tz});
		} catch (const std::exception &) {
			started = false;
		}
		{
			std::lock_guard<std::mutex> l(m);
			gate = started ? 1 : -1;
		}
		cv.notify_all();
		for (std::thread &t : ts)
			t.join();
		return gate > 0;
	}
};

/* `kernel<<<grid, block, shmem, stream>>>(args)` is `launch(kernel, grid, block, shmem, stream)(args)`. */
template <typename... P>
inline Launch<P...> launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shmem = 0, cudaStream_t stream = nullptr)
{
	(void)shmem;
	(void)stream;
	return Launch<P...>{kernel, grid, block};
}

} // namespace mlx5_cpu_cuda

#define threadIdx (mlx5_cpu_cuda::ctx.thread)
#define blockIdx (mlx5_cpu_cuda::ctx.block)
#define blockDim (mlx5_cpu_cuda::ctx.block_dim)
#define gridDim (mlx5_cpu_cuda::ctx.grid_dim)

static inline void __syncthreads(void)
{
	if (mlx5_cpu_cuda::ctx.barrier)
		mlx5_cpu_cuda::ctx.barrier->wait();
}

static inline cudaError_t cudaGetLastError(void)
{
	cudaError_t e = mlx5_cpu_cuda::last_error;
	mlx5_cpu_cuda::last_error = cudaSuccess;
	return e;
}

static inline cudaError_t cudaPeekAtLastError(void) { return mlx5_cpu_cuda::last_error; }

static inline const char *cudaGetErrorString(cudaError_t e)
{
	switch (e) {
	case cudaSuccess:
		return "no error";
	case cudaErrorInvalidValue:
		return "invalid argument";
	case cudaErrorLaunchOutOfResources:
		return "too many resources requested for launch";
	}
	return "unknown error";
}

/* Launches return when their grid is done: there is nothing left to wait for. */
static inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
static inline cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

#endif /* MLX5_DPA_CPU_CUDA_RUNTIME_H */
