/* mlx5-dpa stand-in: see cuda_runtime.h. */
#include "cuda_runtime.h"
