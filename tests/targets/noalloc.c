// A static program with no C library and so no allocator: --heap must refuse it (exit 2).
// Built with -static -nostdlib; it just sleeps a little and exits.
struct ts {
	long sec, nsec;
};

void _start(void)
{
	struct ts t = { 0, 200000000 };
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(35), "D"(&t), "S"(0) : "rcx", "r11", "memory");
	__asm__ volatile("syscall" : : "a"(60), "D"(0) : "rcx", "r11", "memory");
	for (;;)
		;
}
