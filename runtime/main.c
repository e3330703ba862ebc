/*
 * main.c: pcc-run, the program: all of it but main is rt_main (run.c) in
 * libpccrt, which the benchmarks' timing drivers run around their own
 * step function.
 */
#include "runtime/rt.h"

int main(int argc, char **argv)
{
	return rt_main(argc, argv, NULL);
}
