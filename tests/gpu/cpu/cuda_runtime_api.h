/* mlx5-dpa: the CPU runtime for CUDA kernels has one header (cuda_runtime.h). */
#include "cuda_runtime.h"
