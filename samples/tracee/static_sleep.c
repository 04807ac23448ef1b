// SPDX-License-Identifier: MIT
/* tracee-static-sleep: statically linked, with sites, sleeping until killed. */
#include <unistd.h>

__attribute__((noinline)) int static_tick(int i)
{
	return i + 1;
}

int main(void)
{
	for (int i = 0;; i = static_tick(i))
		sleep(1);
}
