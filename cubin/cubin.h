/* cubin.h: what cubin.c (cubin ELF images) offers the rest of cubin/ beyond
 * the public grape_cubin_parse. */
#ifndef GRAPE_CUBIN_CUBIN_H
#define GRAPE_CUBIN_CUBIN_H

#include <stddef.h>
#include <stdint.h>

/* The extent of a cubin ELF from its headers (section and program header
 * tables and every section's end), or 0 if data does not start with a
 * plausible 64-bit ELF header. Reads only what the headers say exists. */
size_t grape__elf_extent(const uint8_t* data);

/* Sets libelf's version once per process (thread-safe). */
void grape__elf_init(void);

#endif
