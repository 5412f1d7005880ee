/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * ident_a / ident_b: one program built twice with a different IDENT_VALUE, so both have the
 * same layout (every function at the same address) and differ only in that constant. The
 * isolation tests run one in a process, destroy it, and run the other in a process that
 * reuses the first one's id: each must see its own code.
 *
 * Entries:
 *   ident(x)             IDENT_VALUE + x
 */
#ifndef IDENT_H
#define IDENT_H

#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>

uint64_t ident(uint64_t x);

__dpa_rpc__ uint64_t ident(uint64_t x)
{
	return (uint64_t)IDENT_VALUE + x;
}

#endif
