/* Runs an exported model on rows read from a file (tests/aot_export.rs).
 *
 *   predict IN OUT      IN: rows of SPECC_PREDICT_INPUT_WIDTH floats (raw,
 *                       native byte order); OUT gets rows of
 *                       SPECC_PREDICT_OUTPUT_WIDTH floats the same way.
 *   predict --rows N    calls specc_predict with N rows of zeros and
 *                       prints its return code (for the argument checks).
 *
 * Prints "rows R" and the first row's outputs. Denormals are flushed to zero
 * first, as specc's sessions do. Links with: cc predict.c model.o -lm
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include "model.h"

int main(int argc, char **argv) {
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ | DAZ */
    if (argc == 3 && strcmp(argv[1], "--rows") == 0) {
        int rows = atoi(argv[2]);
        int n = rows > 0 ? rows : 1;
        float *in = calloc((size_t)n * SPECC_PREDICT_INPUT_WIDTH, sizeof(float));
        float *out = calloc((size_t)n * SPECC_PREDICT_OUTPUT_WIDTH, sizeof(float));
        printf("rc %d\n", specc_predict(in, out, rows));
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: predict IN OUT | predict --rows N\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    int rows = (int)(bytes / (long)(sizeof(float) * SPECC_PREDICT_INPUT_WIDTH));
    float *in = malloc((size_t)bytes + 1);
    float *out = malloc((size_t)rows * SPECC_PREDICT_OUTPUT_WIDTH * sizeof(float) + 1);
    if (fread(in, 1, (size_t)bytes, f) != (size_t)bytes) {
        perror(argv[1]);
        return 2;
    }
    fclose(f);
    int rc = specc_predict(in, out, rows);
    if (rc != 0) {
        fprintf(stderr, "specc_predict returned %d\n", rc);
        return 3;
    }
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(out, sizeof(float), (size_t)rows * SPECC_PREDICT_OUTPUT_WIDTH, o) !=
                  (size_t)rows * SPECC_PREDICT_OUTPUT_WIDTH) {
        perror(argv[2]);
        return 2;
    }
    fclose(o);
    printf("rows %d\n", rows);
    for (int j = 0; j < SPECC_PREDICT_OUTPUT_WIDTH && rows > 0; j++)
        printf("%s%g", j ? " " : "", out[j]);
    printf("\n");
    return 0;
}
