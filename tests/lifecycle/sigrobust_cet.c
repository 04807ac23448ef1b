// SPDX-License-Identifier: MIT
/*
 * Built with -fcf-protection: the site follows endbr64 (bytes 4..8 of a
 * 16-byte aligned function), so it crosses an 8-byte boundary and a batch
 * without INT3s writes it with a 16-byte compare-and-exchange.
 */
#include "test_common.h"

__attribute__((aligned(16))) TRACEE long sr_fcet(long x) { TRACEE_BODY(); return x * 7 + 3; }
