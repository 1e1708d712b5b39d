/* placeholder until the predict module lands */
typedef int grape__predict_placeholder_t;
