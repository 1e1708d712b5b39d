/* The OpenGL types cuda_gl_interop.h uses (see sim/interop/README.md). */
#ifndef GRAPE_SIM_INTEROP_GL_H
#define GRAPE_SIM_INTEROP_GL_H
typedef unsigned int GLenum;
typedef unsigned int GLuint;
#endif
