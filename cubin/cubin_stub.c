/* placeholder until the parser lands */
typedef int grape__cubin_placeholder_t;
