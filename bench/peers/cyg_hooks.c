// SPDX-License-Identifier: MIT
/* empty -finstrument-functions hooks, in their own translation unit */
void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site) {}
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site) {}
