/*
 * mlx5-dpa: a stand-in for the CUDA runtime's declarations, for checking device code with
 * clang's CUDA front end where no CUDA toolkit is installed:
 *
 *   clang++ -x cuda --cuda-gpu-arch=sm_80 --cuda-device-only -nocudainc -nocudalib \
 *           -fsyntax-only -include cuda_runtime.h -I tests/gpu/standin ...
 *
 * (`-include` does what nvcc does implicitly.) It declares what GPUNetIO code uses: the
 * qualifiers, the built-in variables, fences, barriers, atomics, warp shuffles and votes,
 * clock64, printf, and the launch and error calls of host code. Declarations only: nothing here
 * runs, and nothing of NVIDIA's is copied.
 */
#ifndef MLX5_DPA_CUDA_RUNTIME_STANDIN_H
#define MLX5_DPA_CUDA_RUNTIME_STANDIN_H

#include <stdio.h>
#include <stdlib.h>
#ifdef __cplusplus
/* The C++ library's <new> first, while __device__ is undefined: clang's cuda_wrappers/new then
 * adds no device operators that would clash with the library's own. */
#include <new>
#endif

#define __CUDACC__ 1
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))

struct dim3 {
	unsigned x, y, z;
	__host__ __device__ dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
#include <__clang_cuda_builtin_vars.h>

typedef struct CUstream_st *cudaStream_t;
typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;
extern "C" __host__ cudaError_t cudaGetLastError(void);
extern "C" __host__ cudaError_t cudaPeekAtLastError(void);
extern "C" __host__ const char *cudaGetErrorString(cudaError_t);
extern "C" __host__ cudaError_t cudaStreamSynchronize(cudaStream_t);
extern "C" __host__ cudaError_t cudaDeviceSynchronize(void);
extern "C" __host__ int cudaConfigureCall(dim3 grid, dim3 block, size_t shmem = 0, cudaStream_t stream = 0);
extern "C" __device__ int printf(const char *, ...);

__device__ void __syncthreads(void);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ void __threadfence(void);
__device__ void __threadfence_block(void);
__device__ void __threadfence_system(void);
__device__ void __nanosleep(unsigned);
__device__ long long clock64(void);
__device__ unsigned __activemask(void);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ int __all_sync(unsigned, int);
__device__ int __popc(unsigned);
__device__ int __popcll(unsigned long long);
__device__ int __ffs(int);
__device__ int __ffsll(long long);
__device__ int __clz(int);
__device__ unsigned __brev(unsigned);
__device__ unsigned __byte_perm(unsigned, unsigned, unsigned);

#define MLX5_DPA_STANDIN_SHFL(T)                                                   \
	__device__ T __shfl_sync(unsigned, T, int, int width = 32);               \
	__device__ T __shfl_up_sync(unsigned, T, unsigned, int width = 32);       \
	__device__ T __shfl_down_sync(unsigned, T, unsigned, int width = 32);     \
	__device__ T __shfl_xor_sync(unsigned, T, int, int width = 32);
MLX5_DPA_STANDIN_SHFL(int)
MLX5_DPA_STANDIN_SHFL(unsigned)
MLX5_DPA_STANDIN_SHFL(long)
MLX5_DPA_STANDIN_SHFL(unsigned long)
MLX5_DPA_STANDIN_SHFL(long long)
MLX5_DPA_STANDIN_SHFL(unsigned long long)
#undef MLX5_DPA_STANDIN_SHFL

#define MLX5_DPA_STANDIN_ATOMICS(T)                                                \
	__device__ T atomicAdd(T *, T);                                           \
	__device__ T atomicAdd_system(T *, T);                                    \
	__device__ T atomicMax(T *, T);                                           \
	__device__ T atomicMin(T *, T);                                           \
	__device__ T atomicExch(T *, T);                                          \
	__device__ T atomicCAS(T *, T, T);                                        \
	__device__ T atomicCAS_system(T *, T, T);                                 \
	__device__ T atomicOr(T *, T);                                            \
	__device__ T atomicAnd(T *, T);
MLX5_DPA_STANDIN_ATOMICS(int)
MLX5_DPA_STANDIN_ATOMICS(unsigned)
MLX5_DPA_STANDIN_ATOMICS(unsigned long long)
#undef MLX5_DPA_STANDIN_ATOMICS

#endif /* MLX5_DPA_CUDA_RUNTIME_STANDIN_H */
