/* The image registry: the kernel images behind each fatbin, module and
 * library handle, for parameter layouts the driver cannot give (funcinfo.c)
 * and for the trace (trace.c).
 *
 * DESIGN: a handle map (handles.h) from the registering handle to an image
 * record. Images from __cudaRegisterFatBinary are static data and parsed on
 * first need; images handed to cuModuleLoadData & co. may be freed by the
 * caller right after the load, so they are parsed at load. Only the image the
 * current device loads is kept (grape_image_load_arch with its SM version,
 * asked of the driver once). A handle value reused after an unload gets a new
 * record; the old one is kept (a function info may still name it), and every
 * record lives until exit. */
#ifndef GRAPE_INTERPOSE_IMAGES_H
#define GRAPE_INTERPOSE_IMAGES_H

#include "grape/cubin.h"

/* Remembers the image behind a fatbin handle (__cudaRegisterFatBinary: the
 * wrapper is static data, parsed on the first launch that needs it) or a module
 * / library (parsed at load: the caller may free its buffer; fb is adopted). */
void grape__image_register(const void* handle, const void* image);
void grape__image_register_parsed(const void* handle, grape_fatbin_t* fb, const void* origin);

/* True when the image registered under handle lives in a collective
 * library's object (libnccl, librccl, libnvshmem, deep_ep), found with
 * dladdr of the pointer handed to the registration or load. */
int grape__image_collective(const void* handle);

/* The parsed image registered under handle, parsing a registered fatbin now
 * if no launch needed it yet; NULL when unknown or unparsable. Takes the
 * registry's lock: not for the hot path (a function's first launch and the
 * trace writer call it). The set lives until exit. */
const grape_fatbin_t* grape__image_get(const void* handle);

/* Calls fn with every handle an image was registered under. */
void grape__image_each(void (*fn)(const void* handle, void* arg), void* arg);

/* Parses an image handed to the driver, keeping only what the current device
 * loads (grape_image_load_arch with its SM version, when known). */
int grape__image_load(const void* image, grape_fatbin_t** out, grape_cubin_err_t* err);

/* Forgets every image (fork child: kept in memory; tests: freed). */
void grape__images_reset(int free_memory);

#endif
