/* Runs an exported model's raw-features entry point (tests/suite/aot_raw.rs).
 *
 *   predict_raw CSV             every record of CSV (a header first, fields
 *                               unquoted as RFC 4180 says) through
 *                               specc_predict_raw: the cells of the raw keys
 *                               found by name in the header. Prints "rows N",
 *                               then one line of outputs per row (%.9g).
 *   predict_raw --cells C...    one row of SPECC_PREDICT_RAW_COLUMNS cells in
 *                               the header's order ("NULL" passes a null
 *                               pointer); prints "rc R" and, for 0, the
 *                               outputs.
 *   predict_raw --columns N     calls with columns = N; prints "rc R".
 *   predict_raw --rows N        calls with rows = N (cells of the first
 *                               --cells row are not needed for N <= 0).
 *
 * Denormals are flushed to zero first, as specc's sessions do. Links with:
 * cc predict_raw.c model.o -lm
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include "model.h"

static const char *const names[] = SPECC_PREDICT_RAW_COLUMN_NAMES;

static void print_row(const float *out) {
    for (int j = 0; j < SPECC_PREDICT_OUTPUT_WIDTH; j++)
        printf("%s%.9g", j ? " " : "", out[j]);
    printf("\n");
}

/* Splits the text into records of fields in place: `"` quotes a field, `""`
 * inside quotes is one quote, records end at \n or \r\n. Returns the number
 * of records; fields[r * cap + f] is field f of record r, counts[r] its
 * number of fields. */
static int parse_csv(char *s, char ***fields_out, int **counts_out, int cap) {
    int rows_cap = 1024, rows = 0;
    char **fields = malloc(sizeof(char *) * (size_t)rows_cap * (size_t)cap);
    int *counts = malloc(sizeof(int) * (size_t)rows_cap);
    char *p = s;
    while (*p) {
        if (rows == rows_cap) {
            rows_cap *= 2;
            fields = realloc(fields, sizeof(char *) * (size_t)rows_cap * (size_t)cap);
            counts = realloc(counts, sizeof(int) * (size_t)rows_cap);
        }
        int n = 0;
        for (;;) {
            char *w = p, *start = p;
            if (*p == '"') {
                p++;
                for (;;) {
                    if (*p == '"' && p[1] == '"') {
                        *w++ = '"';
                        p += 2;
                    } else if (*p == '"') {
                        p++;
                        break;
                    } else if (*p == 0) {
                        break;
                    } else {
                        *w++ = *p++;
                    }
                }
            } else {
                while (*p && *p != ',' && *p != '\n' && *p != '\r')
                    *w++ = *p++;
            }
            char end = *p;
            if (end)
                p++;
            if (end == '\r' && *p == '\n')
                p++;
            *w = 0; /* w <= the delimiter's place: nothing unread is lost */
            if (n < cap)
                fields[rows * cap + n] = start;
            n++;
            if (end == ',')
                continue;
            break;
        }
        counts[rows++] = n;
    }
    *fields_out = fields;
    *counts_out = counts;
    return rows;
}

int main(int argc, char **argv) {
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ | DAZ */
    float out[SPECC_PREDICT_OUTPUT_WIDTH];
    if (argc == 3 && strcmp(argv[1], "--columns") == 0) {
        const char *cells[SPECC_PREDICT_RAW_COLUMNS + 8] = {0};
        for (int k = 0; k < SPECC_PREDICT_RAW_COLUMNS + 8; k++)
            cells[k] = "1";
        printf("rc %d\n", specc_predict_raw(cells, atoi(argv[2]), out, 1));
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--rows") == 0) {
        printf("rc %d\n", specc_predict_raw(NULL, SPECC_PREDICT_RAW_COLUMNS, out, atoi(argv[2])));
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--cells") == 0) {
        if (argc - 2 != SPECC_PREDICT_RAW_COLUMNS) {
            fprintf(stderr, "--cells needs %d cells\n", SPECC_PREDICT_RAW_COLUMNS);
            return 2;
        }
        const char *cells[SPECC_PREDICT_RAW_COLUMNS];
        for (int k = 0; k < SPECC_PREDICT_RAW_COLUMNS; k++)
            cells[k] = strcmp(argv[k + 2], "NULL") == 0 ? NULL : argv[k + 2];
        int rc = specc_predict_raw(cells, SPECC_PREDICT_RAW_COLUMNS, out, 1);
        printf("rc %d\n", rc);
        if (rc == 0)
            print_row(out);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: predict_raw CSV | --cells C... | --columns N | --rows N\n");
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
    char *text = malloc((size_t)bytes + 1);
    if (fread(text, 1, (size_t)bytes, f) != (size_t)bytes) {
        perror(argv[1]);
        return 2;
    }
    text[bytes] = 0;
    fclose(f);
    enum { CAP = 256 };
    char **fields;
    int *counts;
    int records = parse_csv(text, &fields, &counts, CAP);
    if (records < 1) {
        fprintf(stderr, "%s: no header\n", argv[1]);
        return 2;
    }
    int at[SPECC_PREDICT_RAW_COLUMNS];
    for (int k = 0; k < SPECC_PREDICT_RAW_COLUMNS; k++) {
        at[k] = -1;
        for (int c = 0; c < counts[0] && c < CAP; c++)
            if (strcmp(fields[c], names[k]) == 0)
                at[k] = c;
        if (at[k] < 0) {
            fprintf(stderr, "%s: no column %s\n", argv[1], names[k]);
            return 2;
        }
    }
    int rows = records - 1;
    const char **cells = malloc(sizeof(char *) * (size_t)(rows + 1) * SPECC_PREDICT_RAW_COLUMNS);
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < SPECC_PREDICT_RAW_COLUMNS; k++)
            cells[r * SPECC_PREDICT_RAW_COLUMNS + k] =
                at[k] < counts[r + 1] ? fields[(r + 1) * CAP + at[k]] : "";
    float *outs = malloc(sizeof(float) * ((size_t)rows + 1) * SPECC_PREDICT_OUTPUT_WIDTH);
    int rc = specc_predict_raw(cells, SPECC_PREDICT_RAW_COLUMNS, outs, rows);
    if (rc != 0) {
        fprintf(stderr, "specc_predict_raw returned %d\n", rc);
        return 3;
    }
    printf("rows %d\n", rows);
    for (int r = 0; r < rows; r++)
        print_row(outs + (size_t)r * SPECC_PREDICT_OUTPUT_WIDTH);
    return 0;
}
