/* Device program of tests/data/dpa/host_models.elf: answers which hardware model it was built
 * for, from the __NV_DPA macros `mlx5-dpa cc` defines per --cpu model (as DPACC's -mcpu does). */
#include <libflexio-dev/flexio_dev.h>
#include <stdint.h>

#if !defined(__NV_DPA)
#error "built without a hardware model"
#elif __NV_DPA >= __NV_DPA_CX9
#define BUILT_FOR 9
#elif __NV_DPA >= __NV_DPA_CX8
#define BUILT_FOR 8
#elif __NV_DPA == __NV_DPA_BF3
#define BUILT_FOR 3
#else
#error "unknown hardware model"
#endif

uint64_t which_model(void)
{
	return BUILT_FOR;
}
