/*
 * mlx5-dpa: GPUNetIO Ethernet device utilities shared by the send and receive headers:
 * byte order, fences at a scope, atomics at a sharing mode, a spin lock, and stores the NIC
 * reads. Written for mlx5-dpa from NVIDIA's public GPUNetIO API reference.
 */
#ifndef DOCA_GPUNETIO_DEV_ETH_COMMON_CUH
#define DOCA_GPUNETIO_DEV_ETH_COMMON_CUH

#include "doca_gpunetio_eth_def.h"

/* How long a blocking wait waits before it gives up (DOCA_ERROR_TIME_OUT); define it before
 * the include to change it. */
#ifndef DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS
#define DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS 10000000000ull
#endif

/*
 * A volatile access: read or written once, never cached in a register. `__typeof__` (not
 * `decltype`, which gives `T &` for an expression such as `*p`, and a pointer to a reference
 * is ill-formed) takes the object's type for any lvalue.
 */
#define DOCA_GPUNETIO_VOLATILE(x) (*(volatile __typeof__(x) *)&(x))

__device__ static __forceinline__ uint16_t doca_gpu_dev_eth_bswap16(uint16_t v)
{
	return (uint16_t)((v << 8) | (v >> 8));
}

__device__ static __forceinline__ uint32_t doca_gpu_dev_eth_bswap32(uint32_t v)
{
	return ((v & 0xffu) << 24) | ((v & 0xff00u) << 8) | ((v >> 8) & 0xff00u) | (v >> 24);
}

/* The public header's macro form of the 16-bit swap (a constant expression). */
#define DOCA_GPUNETIO_ETH_BSWAP16(v) ((uint16_t)((((uint16_t)(v)) >> 8) | (uint16_t)(((uint16_t)(v)) << 8)))

__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_bswap64(uint64_t v)
{
	return ((uint64_t)doca_gpu_dev_eth_bswap32((uint32_t)v) << 32) |
	       doca_gpu_dev_eth_bswap32((uint32_t)(v >> 32));
}

/* A fence that orders this thread's earlier writes before its later ones, seen at `scope`. */
template <enum doca_gpu_dev_eth_sync_scope scope>
__device__ static __forceinline__ void doca_gpu_dev_eth_fence_release(void)
{
	if (scope == DOCA_GPUNETIO_ETH_SYNC_SCOPE_SYS)
		__threadfence_system();
	else if (scope == DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU)
		__threadfence();
	else
		__threadfence_block();
}

/* The NIC reads what is written for it through PCIe: always a system-scope fence before it. */
__device__ static __forceinline__ void doca_gpu_dev_eth_fence_nic(void)
{
	__threadfence_system();
}

/* 64-bit add; plain when the queue belongs to one thread. */
template <enum doca_gpu_dev_eth_resource_sharing_mode mode>
__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_atomic_add(uint64_t *p, uint64_t v)
{
	if (mode == DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_EXCLUSIVE) {
		uint64_t old = *p;
		*p = old + v;
		return old;
	}
	return (uint64_t)atomicAdd((unsigned long long *)p, (unsigned long long)v);
}

/* 64-bit max, returning the value before. */
template <enum doca_gpu_dev_eth_resource_sharing_mode mode>
__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_atomic_max(uint64_t *p, uint64_t v)
{
	if (mode == DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_EXCLUSIVE) {
		uint64_t old = *p;
		if (v > old)
			*p = v;
		return old;
	}
	return (uint64_t)atomicMax((unsigned long long *)p, (unsigned long long)v);
}

template <enum doca_gpu_dev_eth_resource_sharing_mode mode>
__device__ static __forceinline__ void doca_gpu_dev_eth_lock(int32_t *lock)
{
	if (mode == DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_EXCLUSIVE)
		return;
	while (atomicCAS((int *)lock, 0, 1) != 0)
		;
	__threadfence();
}

template <enum doca_gpu_dev_eth_resource_sharing_mode mode>
__device__ static __forceinline__ void doca_gpu_dev_eth_unlock(int32_t *lock)
{
	if (mode == DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_EXCLUSIVE)
		return;
	__threadfence();
	atomicExch((int *)lock, 0);
}

/* An 8-byte store the NIC may read (a WQE word, a doorbell). */
__device__ static __forceinline__ void doca_gpu_dev_eth_store64(uint64_t addr, uint64_t v)
{
	*(volatile uint64_t *)addr = v;
}

__device__ static __forceinline__ void doca_gpu_dev_eth_store32(uint64_t addr, uint32_t v)
{
	*(volatile uint32_t *)addr = v;
}

__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_load64(uint64_t addr)
{
	return *(volatile uint64_t *)addr;
}

/* Two 32-bit values as the 8 bytes they are in memory: `a` first, then `b`. */
__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_pair(uint32_t a, uint32_t b)
{
	return (uint64_t)a | ((uint64_t)b << 32);
}

/* The first `n` (at most 8) bytes at `p` as the little-endian word they make in memory. */
__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_bytes(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Nanoseconds of a clock that only moves forward: the GPU's global timer (host builds: the
 * monotonic clock). */
__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_now_ns(void)
{
#if defined(MLX5_GPUNETIO_HOST_BUILD)
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#else
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#endif
}

#endif /* DOCA_GPUNETIO_DEV_ETH_COMMON_CUH */
