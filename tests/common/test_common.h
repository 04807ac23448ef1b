/* SPDX-License-Identifier: MIT */
#ifndef USFT_TEST_COMMON_H
#define USFT_TEST_COMMON_H
#endif
