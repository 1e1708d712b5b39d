/* placeholder until the graphcache module lands */
typedef int grape__graphcache_placeholder_t;
