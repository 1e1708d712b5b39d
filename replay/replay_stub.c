/* placeholder until the replay module lands */
typedef int grape__replay_placeholder_t;
