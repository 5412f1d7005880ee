/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ident_a: ident.h with IDENT_VALUE 0xa000 (see ident.h). */
#define IDENT_VALUE 0xa000
#include "ident.h"
