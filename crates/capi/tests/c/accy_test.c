/*
 * The C side of tests/c_abi.rs: a C host of accy linked against libaccy_capi.a.
 *
 * usage: accy_test DIR
 *
 * DIR holds what the Rust test wrote: mlp.accyb (examples/mlp.accy as wire bytes), its input
 * x.bin and weights <name>.bin (raw little-endian f32), neg.accyb (a 4-element negation) and
 * huge.accyb (a program whose scratch cannot fit in the address space) and mlp_b3.accyb (the
 * MLP for a batch of 3). This program runs the MLP in an exact and a default session and as
 * an exact-mode model, and writes the outputs to out_exact.bin, out_default.bin and
 * out_model.bin for the Rust test to compare; on the way it provokes every status code 1-9
 * and checks each, and checks the ABI's rules (NULL with length 0, cleared out-parameters,
 * struct sizes, per-thread messages). It prints a summary and exits 0 only if every check
 * passed and every status code was seen.
 */
#include "accy.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Test-only (cargo feature `test-hooks`, not in accy.h): panics inside the library. */
accy_status accy_test_panic(const char *message);

static int checks, failures;
static int seen[11];
static const char *dir;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        checks++;                                                           \
        if (!(cond)) {                                                      \
            failures++;                                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);            \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
        }                                                                   \
    } while (0)

/* Checks that `call` returned `want`, that a failure left a message and a success none. */
#define EXPECT(want, call) expect((call), (want), #call, __LINE__)

static void expect(accy_status got, accy_status want, const char *what, int line) {
    const char *message = accy_last_error_message();
    checks++;
    if (got != want) {
        failures++;
        fprintf(stderr, "FAIL line %d: %s\n  returned %u (%s), expected %u (%s); message: %s\n",
                line, what, got, accy_status_name(got), want, accy_status_name(want), message);
        return;
    }
    if ((want == ACCY_STATUS_OK) != (message[0] == '\0')) {
        failures++;
        fprintf(stderr, "FAIL line %d: %s returned %s with message \"%s\"\n", line, what,
                accy_status_name(got), message);
        return;
    }
    if (want < 11) seen[want] = 1;
}

static void *read_file(const char *name, size_t *length) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *data = malloc(n > 0 ? (size_t)n : 1);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    *length = (size_t)n;
    return data;
}

static void write_file(const char *name, const void *data, size_t length) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, length, f) != length || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

static const char *const weight_names[] = {"fc1.weight", "fc1.bias", "fc2.weight",
                                           "fc2.bias",   "fc3.weight", "fc3.bias"};
#define WEIGHTS 6

static accy_weights *load_weights(void) {
    accy_weight entries[WEIGHTS];
    void *data[WEIGHTS];
    for (int i = 0; i < WEIGHTS; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.bin", weight_names[i]);
        data[i] = read_file(file, &entries[i].byte_size);
        entries[i].name = weight_names[i];
        entries[i].data = data[i];
    }
    accy_weights *weights = (accy_weights *)&entries; /* must be cleared on entry */
    EXPECT(ACCY_STATUS_OK, accy_weights_create(entries, WEIGHTS, &weights));
    /* The set holds copies: the caller's memory may go. */
    for (int i = 0; i < WEIGHTS; i++) free(data[i]);

    /* Bad sets: a duplicate name, NULL data with a nonzero length, a NULL name. */
    accy_weights *bad = (accy_weights *)&entries;
    accy_weight dup[2] = {{"w", "abcd", 4}, {"w", "efgh", 4}};
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_weights_create(dup, 2, &bad));
    CHECK(bad == NULL, "a failed accy_weights_create left its out-parameter set");
    accy_weight null_data = {"w", NULL, 4};
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_weights_create(&null_data, 1, &bad));
    accy_weight null_name = {NULL, "abcd", 4};
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_weights_create(&null_name, 1, &bad));
    /* NULL with count 0 is the empty set. */
    EXPECT(ACCY_STATUS_OK, accy_weights_create(NULL, 0, &bad));
    EXPECT(ACCY_STATUS_OK, accy_weights_destroy(bad));
    return weights;
}

static accy_session *create(size_t threads, int exact) {
    accy_session_options options = {.size = sizeof options};
    options.threads = threads;
    options.exact = exact;
    accy_session *session = NULL;
    EXPECT(ACCY_STATUS_OK, accy_session_create(&options, &session));
    const char *target = NULL;
    size_t workers = 0;
    EXPECT(ACCY_STATUS_OK, accy_session_info(session, &target, &workers));
    CHECK(target && target[0] != '\0' && workers == threads, "session info: %s, %zu threads",
          target ? target : "(null)", workers);
    return session;
}

/* Session options: sizes, unknown options, target names. Status 4 and 7. */
static void test_options(void) {
    accy_session *session = (accy_session *)&session;
    accy_session_options options = {.size = sizeof options};
    options.size = sizeof(size_t);
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_session_create(&options, &session));
    CHECK(session == NULL, "a failed accy_session_create left its out-parameter set");
    /* A newer caller's larger struct: accepted while the options this library does not know
     * are zero, refused when one is set. */
    struct {
        accy_session_options known;
        uint64_t newer;
    } grown = {.known = {.size = sizeof grown}};
    grown.known.threads = 1;
    EXPECT(ACCY_STATUS_OK, accy_session_create(&grown.known, &session));
    EXPECT(ACCY_STATUS_OK, accy_session_destroy(session));
    grown.newer = 1;
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_session_create(&grown.known, &session));
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_session_create(NULL, NULL));
    /* A garbage thread count (a negative int gone through size_t) is refused, not started. */
    options.size = sizeof options;
    options.threads = (size_t)-1;
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_session_create(&options, &session));
    options.threads = 0;
    options.target = "no-such-target";
    EXPECT(ACCY_STATUS_COMPILE_FAILED, accy_session_create(&options, &session));
    CHECK(strstr(accy_last_error_message(), "no-such-target") != NULL, "message: %s",
          accy_last_error_message());
    EXPECT(ACCY_STATUS_OK, accy_session_destroy(NULL));
}

/* Compiles the MLP in `session`; checks the compile failures. Status 1, 2, 4. */
static accy_program compile_mlp(accy_session *session, const accy_weights *weights) {
    size_t length;
    uint8_t *bytes = read_file("mlp.accyb", &length);
    accy_program program = {.id = 42};

    EXPECT(ACCY_STATUS_INVALID_PROGRAM,
           accy_program_compile(session, (const uint8_t *)"not a program", 13, weights, &program));
    CHECK(program.id == 0, "a failed compile left the handle set");
    EXPECT(ACCY_STATUS_INVALID_PROGRAM, accy_program_compile(session, NULL, 0, weights, &program));
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_program_compile(session, NULL, 5, weights, &program));
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_program_compile(session, bytes, length, weights, NULL));
    EXPECT(ACCY_STATUS_INVALID_HANDLE, accy_program_compile(NULL, bytes, length, weights, &program));
    /* No weights: the program's weight parameters are missing. */
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_program_compile(session, bytes, length, NULL, &program));
    /* Major version 2 of the wire format (the u16 after the 8-byte magic). */
    uint8_t *newer = malloc(length);
    memcpy(newer, bytes, length);
    newer[8] = 2;
    EXPECT(ACCY_STATUS_UNSUPPORTED_VERSION,
           accy_program_compile(session, newer, length, weights, &program));
    free(newer);

    EXPECT(ACCY_STATUS_OK, accy_program_compile(session, bytes, length, weights, &program));
    CHECK(program.id != 0, "compiled handle is 0");
    free(bytes);
    return program;
}

/* Descriptors of the MLP: f32[1,784] in, f32[1,10] out. */
static void test_descriptors(accy_session *session, accy_program program) {
    size_t inputs = 99, outputs = 99;
    EXPECT(ACCY_STATUS_OK, accy_program_io_count(session, program, &inputs, &outputs));
    CHECK(inputs == 1 && outputs == 1, "io count %zu %zu", inputs, outputs);
    accy_descriptor d = {.size = sizeof d};
    EXPECT(ACCY_STATUS_OK, accy_program_input(session, program, 0, &d));
    CHECK(d.dtype == ACCY_DTYPE_F32 && d.rank == 2 && d.dims[0] == 1 && d.dims[1] == 784 &&
              d.dims[2] == 0 && d.byte_size == 784 * 4 && d.alignment == 4,
          "input descriptor: dtype %u rank %u dims %llu x %llu, %zu bytes, align %zu", d.dtype,
          d.rank, (unsigned long long)d.dims[0], (unsigned long long)d.dims[1], d.byte_size,
          d.alignment);
    EXPECT(ACCY_STATUS_OK, accy_program_output(session, program, 0, &d));
    CHECK(d.rank == 2 && d.dims[1] == 10 && d.byte_size == 40, "output descriptor");
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_program_output(session, program, 1, &d));
    CHECK(d.byte_size == 0 && d.rank == 0 && d.size == sizeof d, "failed describe not cleared");
    d.size = 8;
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_program_input(session, program, 0, &d));
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_program_input(session, program, 0, NULL));
}

/* Runs the MLP on x.bin and writes the output to `out_file`; checks buffer failures
 * (status 4) on the way. */
static void run_mlp(accy_session *session, accy_program program, const char *out_file) {
    size_t x_length;
    float *x = read_file("x.bin", &x_length);
    float y[10], again[10];
    accy_scratch *scratch = NULL;
    EXPECT(ACCY_STATUS_OK, accy_scratch_create(&scratch));
    accy_const_buffer in = {x, x_length};
    accy_buffer out = {y, sizeof y};
    EXPECT(ACCY_STATUS_OK, accy_program_invoke(session, program, scratch, &in, 1, &out, 1));
    /* The same call again, on the now warm scratch, gives the same bytes. */
    accy_buffer out2 = {again, sizeof again};
    EXPECT(ACCY_STATUS_OK, accy_program_invoke(session, program, scratch, &in, 1, &out2, 1));
    CHECK(memcmp(y, again, sizeof y) == 0, "a second run differs");
    write_file(out_file, y, sizeof y);

    accy_buffer short_out = {y, sizeof y - 4};
    EXPECT(ACCY_STATUS_INVALID_BUFFER,
           accy_program_invoke(session, program, scratch, &in, 1, &short_out, 1));
    EXPECT(ACCY_STATUS_INVALID_BUFFER,
           accy_program_invoke(session, program, scratch, &in, 0, &out, 1));
    EXPECT(ACCY_STATUS_INVALID_BUFFER,
           accy_program_invoke(session, program, scratch, NULL, 1, &out, 1));
    EXPECT(ACCY_STATUS_INVALID_BUFFER,
           accy_program_invoke(session, program, NULL, &in, 1, &out, 1));
    accy_const_buffer null_in = {NULL, x_length};
    EXPECT(ACCY_STATUS_INVALID_BUFFER,
           accy_program_invoke(session, program, scratch, &null_in, 1, &out, 1));
    /* An output overlapping the input. */
    accy_buffer onto_input = {x, sizeof y};
    EXPECT(ACCY_STATUS_INVALID_BUFFER,
           accy_program_invoke(session, program, scratch, &in, 1, &onto_input, 1));
    /* A misaligned input: f32 data one byte past an aligned address. */
    char *raw = malloc(x_length + 4);
    memcpy(raw + 1, x, x_length);
    accy_const_buffer odd = {raw + 1, x_length};
    EXPECT(ACCY_STATUS_INVALID_BUFFER,
           accy_program_invoke(session, program, scratch, &odd, 1, &out, 1));
    free(raw);
    EXPECT(ACCY_STATUS_OK, accy_scratch_destroy(scratch));
    free(x);
}

/* Dead, zero and foreign handles. Status 3. */
static void test_handles(accy_session *session, accy_session *other, accy_program mlp) {
    size_t length;
    uint8_t *bytes = read_file("neg.accyb", &length);
    accy_program neg;
    EXPECT(ACCY_STATUS_OK, accy_program_compile(session, bytes, length, NULL, &neg));
    accy_program copy = neg;
    EXPECT(ACCY_STATUS_OK, accy_program_release(session, neg));
    EXPECT(ACCY_STATUS_INVALID_HANDLE, accy_program_release(session, copy));
    size_t n = 7;
    EXPECT(ACCY_STATUS_INVALID_HANDLE, accy_program_io_count(session, copy, &n, NULL));
    CHECK(n == 0, "io count not cleared");
    /* The slot is reused; the old handle stays dead. */
    accy_program reused;
    EXPECT(ACCY_STATUS_OK, accy_program_compile(session, bytes, length, NULL, &reused));
    CHECK(reused.id != copy.id, "a reused slot gave the same handle");
    EXPECT(ACCY_STATUS_INVALID_HANDLE, accy_program_io_count(session, copy, &n, NULL));
    EXPECT(ACCY_STATUS_OK, accy_program_release(session, reused));
    accy_program zero = {0};
    EXPECT(ACCY_STATUS_INVALID_HANDLE, accy_program_release(session, zero));
    EXPECT(ACCY_STATUS_INVALID_HANDLE, accy_program_io_count(other, mlp, &n, NULL));
    EXPECT(ACCY_STATUS_INVALID_HANDLE, accy_program_io_count(NULL, mlp, &n, NULL));
    free(bytes);
}

/* 64 live programs, then a 65th. Status 5. */
static void test_too_many(void) {
    accy_session *session = create(1, 0);
    size_t length;
    uint8_t *bytes = read_file("neg.accyb", &length);
    accy_program programs[64];
    int ok = 1;
    for (int i = 0; i < 64; i++)
        ok &= accy_program_compile(session, bytes, length, NULL, &programs[i]) == ACCY_STATUS_OK;
    CHECK(ok, "64 compiles did not all succeed");
    accy_program more;
    EXPECT(ACCY_STATUS_TOO_MANY_PROGRAMS, accy_program_compile(session, bytes, length, NULL, &more));
    EXPECT(ACCY_STATUS_OK, accy_program_release(session, programs[17]));
    EXPECT(ACCY_STATUS_OK, accy_program_compile(session, bytes, length, NULL, &more));

    /* And the small program runs: neg of {1, -2, 3, 0}. */
    float x[4] = {1, -2, 3, 0}, y[4];
    accy_scratch *scratch;
    EXPECT(ACCY_STATUS_OK, accy_scratch_create(&scratch));
    accy_const_buffer in = {x, sizeof x};
    accy_buffer out = {y, sizeof y};
    EXPECT(ACCY_STATUS_OK, accy_program_invoke(session, more, scratch, &in, 1, &out, 1));
    CHECK(y[0] == -1 && y[1] == 2 && y[2] == -3, "neg gave %g %g %g", y[0], y[1], y[2]);
    /* NULL with length 0 is an empty slice: a wrong size here, not a crash. */
    accy_buffer empty = {NULL, 0};
    EXPECT(ACCY_STATUS_INVALID_BUFFER,
           accy_program_invoke(session, more, scratch, &in, 1, &empty, 1));
    EXPECT(ACCY_STATUS_OK, accy_scratch_destroy(scratch));
    /* Destroying the session releases the programs it still holds. */
    EXPECT(ACCY_STATUS_OK, accy_session_destroy(session));
    free(bytes);
}

/* A program whose scratch is larger than the address space. Status 6. */
static void test_out_of_memory(accy_session *session) {
    size_t length;
    uint8_t *bytes = read_file("huge.accyb", &length);
    accy_program huge;
    EXPECT(ACCY_STATUS_OK, accy_program_compile(session, bytes, length, NULL, &huge));
    float x = 1, y = 0;
    accy_scratch *scratch;
    EXPECT(ACCY_STATUS_OK, accy_scratch_create(&scratch));
    accy_const_buffer in = {&x, sizeof x};
    accy_buffer out = {&y, sizeof y};
    EXPECT(ACCY_STATUS_OUT_OF_MEMORY, accy_program_invoke(session, huge, scratch, &in, 1, &out, 1));
    EXPECT(ACCY_STATUS_OK, accy_scratch_destroy(scratch));
    EXPECT(ACCY_STATUS_OK, accy_program_release(session, huge));
    free(bytes);
}

/* Messages are per thread: a failure on another thread leaves this thread's alone. */
static void *fail_elsewhere(void *arg) {
    accy_session *session = arg;
    accy_program zero = {0};
    accy_status status = accy_program_release(session, zero);
    int ok = status == ACCY_STATUS_INVALID_HANDLE && accy_last_error_message()[0] != '\0';
    return ok ? arg : NULL;
}

static void test_threads(accy_session *session) {
    accy_program zero = {0};
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_program_input(session, zero, 0, NULL));
    char before[256];
    snprintf(before, sizeof before, "%s", accy_last_error_message());
    pthread_t thread;
    void *result = NULL;
    CHECK(pthread_create(&thread, NULL, fail_elsewhere, session) == 0, "pthread_create");
    pthread_join(thread, &result);
    CHECK(result == session, "the other thread's failure had no message");
    CHECK(strcmp(before, accy_last_error_message()) == 0, "another thread's failure changed "
          "this thread's message to %s", accy_last_error_message());
}

/* Models: one set of weights, plans for the model's own batch of 1 and a batch-3 variant, in
 * exact mode, so every row of the batch-3 result equals the batch-1 result bit for bit. The
 * batch-1 output goes to out_model.bin for the Rust test. Status 9 on the way. */
static void test_models(const accy_weights *weights) {
    size_t length, b3_length, neg_length, x_length;
    uint8_t *bytes = read_file("mlp.accyb", &length);
    uint8_t *b3 = read_file("mlp_b3.accyb", &b3_length);
    uint8_t *neg = read_file("neg.accyb", &neg_length);
    float *x = read_file("x.bin", &x_length);
    accy_session_options options = {.size = sizeof options};
    options.threads = 1;
    options.exact = 1;

    accy_model *model = (accy_model *)&options; /* must be cleared on entry */
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_model_create(&options, bytes, length, NULL, &model));
    CHECK(model == NULL, "a failed accy_model_create left its out-parameter set");
    EXPECT(ACCY_STATUS_INVALID_PROGRAM,
           accy_model_create(&options, (const uint8_t *)"junk", 4, weights, &model));
    EXPECT(ACCY_STATUS_OK, accy_model_create(&options, bytes, length, weights, &model));
    uint64_t weight_bytes = 0;
    EXPECT(ACCY_STATUS_OK, accy_model_weight_bytes(model, &weight_bytes));
    uint64_t raw = (784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10) * 4;
    CHECK(weight_bytes >= raw, "weight bytes %llu < %llu", (unsigned long long)weight_bytes,
          (unsigned long long)raw);

    accy_prepared *one = NULL, *three = NULL, *bad = (accy_prepared *)&options;
    EXPECT(ACCY_STATUS_INVALID_MODEL, accy_model_prepare(model, NULL, 0, 0, &bad));
    CHECK(bad == NULL, "a failed accy_model_prepare left its out-parameter set");
    /* Not a shape of this network: one input but no weights, another output type. */
    EXPECT(ACCY_STATUS_INVALID_MODEL, accy_model_prepare(model, neg, neg_length, 1, &bad));
    EXPECT(ACCY_STATUS_INVALID_HANDLE, accy_model_prepare(NULL, NULL, 0, 1, &bad));
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_model_prepare(model, NULL, 5, 1, &bad));
    EXPECT(ACCY_STATUS_OK, accy_model_prepare(model, NULL, 0, 2, &one));
    EXPECT(ACCY_STATUS_OK, accy_model_prepare(model, b3, b3_length, 1, &three));
    /* Plans keep what they share: the model may go first. */
    EXPECT(ACCY_STATUS_OK, accy_model_destroy(model));

    size_t inputs = 9, outputs = 9, capacity = 9;
    EXPECT(ACCY_STATUS_OK, accy_prepared_info(three, &inputs, &outputs, &capacity));
    CHECK(inputs == 1 && outputs == 1 && capacity == 1, "plan info %zu %zu %zu", inputs, outputs,
          capacity);
    EXPECT(ACCY_STATUS_OK, accy_prepared_info(one, NULL, NULL, &capacity));
    CHECK(capacity == 2, "capacity %zu", capacity);
    accy_descriptor d = {.size = sizeof d};
    EXPECT(ACCY_STATUS_OK, accy_prepared_input(three, 0, &d));
    CHECK(d.rank == 2 && d.dims[0] == 3 && d.dims[1] == 784 && d.byte_size == 3 * 784 * 4,
          "batch-3 input descriptor: rank %u dims %llu x %llu, %zu bytes", d.rank,
          (unsigned long long)d.dims[0], (unsigned long long)d.dims[1], d.byte_size);
    EXPECT(ACCY_STATUS_OK, accy_prepared_output(three, 0, &d));
    CHECK(d.byte_size == 3 * 10 * 4, "batch-3 output of %zu bytes", d.byte_size);
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_prepared_output(three, 1, &d));
    CHECK(d.byte_size == 0, "failed describe not cleared");
    EXPECT(ACCY_STATUS_INVALID_HANDLE, accy_prepared_input(NULL, 0, &d));

    float y1[10], y3[30];
    accy_const_buffer in1 = {x, x_length};
    accy_buffer out1 = {y1, sizeof y1};
    EXPECT(ACCY_STATUS_OK, accy_prepared_run(one, &in1, 1, &out1, 1));
    float *x3 = malloc(3 * x_length);
    for (int r = 0; r < 3; r++) memcpy((char *)x3 + r * x_length, x, x_length);
    accy_const_buffer in3 = {x3, 3 * x_length};
    accy_buffer out3 = {y3, sizeof y3};
    EXPECT(ACCY_STATUS_OK, accy_prepared_try_run(three, &in3, 1, &out3, 1));
    for (int r = 0; r < 3; r++)
        CHECK(memcmp(y3 + 10 * r, y1, sizeof y1) == 0, "batch-3 row %d differs from batch 1", r);
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_prepared_run(three, &in1, 1, &out3, 1));
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_prepared_run(one, &in1, 1, NULL, 1));
    accy_buffer onto_input = {x, sizeof y1};
    EXPECT(ACCY_STATUS_INVALID_BUFFER, accy_prepared_run(one, &in1, 1, &onto_input, 1));
    write_file("out_model.bin", y1, sizeof y1);

    EXPECT(ACCY_STATUS_OK, accy_prepared_destroy(one));
    EXPECT(ACCY_STATUS_OK, accy_prepared_destroy(three));
    EXPECT(ACCY_STATUS_OK, accy_prepared_destroy(NULL));
    free(x3);
    free(x);
    free(neg);
    free(b3);
    free(bytes);
}

/* A panic inside the library comes back as a status. Status 8. */
static void test_panic(accy_session *session, accy_program program) {
    EXPECT(ACCY_STATUS_LAUNCH_FAILED, accy_test_panic("provoked by accy_test.c"));
    const char *message = accy_last_error_message();
    CHECK(strncmp(message, "internal error", 14) == 0 && strstr(message, "provoked by accy_test.c"),
          "panic message: %s", message);
    /* The library still works afterwards. */
    size_t n;
    EXPECT(ACCY_STATUS_OK, accy_program_io_count(session, program, &n, NULL));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    CHECK(accy_abi_version() == ACCY_ABI_VERSION, "ABI version %u, header %u",
          accy_abi_version(), ACCY_ABI_VERSION);
    CHECK(strcmp(accy_status_name(ACCY_STATUS_OK), "ok") == 0, "status name of 0");
    CHECK(strcmp(accy_status_name(ACCY_STATUS_LAUNCH_FAILED), "launch_failed") == 0, "name of 8");
    CHECK(strcmp(accy_status_name(1000), "unknown") == 0, "an unknown code is named unknown");

    test_options();
    accy_weights *weights = load_weights();
    accy_session *exact = create(1, 1);
    accy_session *fast = create(2, 0);
    accy_program exact_mlp = compile_mlp(exact, weights);
    accy_program fast_mlp = compile_mlp(fast, weights);
    test_models(weights);
    /* Programs keep their weights: the set may go now. */
    EXPECT(ACCY_STATUS_OK, accy_weights_destroy(weights));
    test_descriptors(exact, exact_mlp);
    run_mlp(exact, exact_mlp, "out_exact.bin");
    run_mlp(fast, fast_mlp, "out_default.bin");
    test_handles(exact, fast, exact_mlp);
    test_too_many();
    test_out_of_memory(fast);
    test_threads(fast);
    test_panic(exact, exact_mlp);

    EXPECT(ACCY_STATUS_OK, accy_program_release(exact, exact_mlp));
    EXPECT(ACCY_STATUS_OK, accy_session_destroy(exact));
    EXPECT(ACCY_STATUS_OK, accy_session_destroy(fast));

    printf("statuses seen:");
    int missing = 0;
    for (int code = 1; code <= 9; code++) {
        printf(" %d=%s", code, seen[code] ? "yes" : "NO");
        missing += !seen[code];
    }
    printf("\naccy_test.c: %d passed, %d failed\n", checks - failures, failures);
    return failures == 0 && missing == 0 ? 0 : 1;
}
