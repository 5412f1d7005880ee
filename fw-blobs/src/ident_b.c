/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ident_b: ident.h with IDENT_VALUE 0xb000 (see ident.h). */
#define IDENT_VALUE 0xb000
#include "ident.h"
