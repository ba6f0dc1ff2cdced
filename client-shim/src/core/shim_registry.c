#include "shim_registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Registrations happen in constructors (single-threaded in practice) but dlopen() can add more
 * later from any thread, so lookups and inserts share one lock. Lookups are by address: a small
 * open-addressing table keyed by the host pointer keeps launches O(1). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct vmc_kernel **kernels;
static uint32_t n_kernels, cap_kernels;
static struct vmc_var **vars;
static uint32_t n_vars, cap_vars;

struct slot {
    const void *key;
    void *value;
};
struct table {
    struct slot *slots;
    size_t cap; /* power of two */
    size_t used;
};
static struct table kernel_table, var_table;

static size_t hash_ptr(const void *p) {
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static void table_put(struct table *t, const void *key, void *value);

static int table_grow(struct table *t) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct slot *old = t->slots;
    size_t old_cap = t->cap;
    t->slots = calloc(cap, sizeof *t->slots);
    if (!t->slots) {
        t->slots = old;
        return -1;
    }
    t->cap = cap;
    t->used = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key)
            table_put(t, old[i].key, old[i].value);
    free(old);
    return 0;
}

static void table_put(struct table *t, const void *key, void *value) {
    if ((t->used + 1) * 2 > t->cap && table_grow(t) != 0)
        return;
    size_t i = hash_ptr(key) & (t->cap - 1);
    while (t->slots[i].key && t->slots[i].key != key)
        i = (i + 1) & (t->cap - 1);
    if (!t->slots[i].key)
        t->used++;
    t->slots[i].key = key;
    t->slots[i].value = value;
}

static void *table_get(const struct table *t, const void *key) {
    if (!t->cap || !key)
        return NULL;
    size_t i = hash_ptr(key) & (t->cap - 1);
    while (t->slots[i].key) {
        if (t->slots[i].key == key)
            return t->slots[i].value;
        i = (i + 1) & (t->cap - 1);
    }
    return NULL;
}

static int append(void ***array, uint32_t *n, uint32_t *cap, void *item) {
    if (*n == *cap) {
        uint32_t c = *cap ? *cap * 2 : 64;
        void **a = realloc(*array, c * sizeof **array);
        if (!a)
            return -1;
        *array = a;
        *cap = c;
    }
    (*array)[(*n)++] = item;
    return 0;
}

struct vmc_kernel *vmc_kernel_mut(const void *host_fun) {
    pthread_mutex_lock(&lock);
    struct vmc_kernel *k = table_get(&kernel_table, host_fun);
    pthread_mutex_unlock(&lock);
    return k;
}

const struct vmc_kernel *vmc_kernel_by_host_fun(const void *host_fun) { return vmc_kernel_mut(host_fun); }

const struct vmc_var *vmc_var_by_host_var(const void *host_var) {
    pthread_mutex_lock(&lock);
    const struct vmc_var *v = table_get(&var_table, host_var);
    pthread_mutex_unlock(&lock);
    return v;
}

uint32_t vmc_kernel_count(void) {
    pthread_mutex_lock(&lock);
    uint32_t n = n_kernels;
    pthread_mutex_unlock(&lock);
    return n;
}

uint32_t vmc_var_count(void) {
    pthread_mutex_lock(&lock);
    uint32_t n = n_vars;
    pthread_mutex_unlock(&lock);
    return n;
}

const struct vmc_kernel *vmc_kernel_at(uint32_t index) {
    pthread_mutex_lock(&lock);
    const struct vmc_kernel *k = index < n_kernels ? kernels[index] : NULL;
    pthread_mutex_unlock(&lock);
    return k;
}

const struct vmc_var *vmc_var_at(uint32_t index) {
    pthread_mutex_lock(&lock);
    const struct vmc_var *v = index < n_vars ? vars[index] : NULL;
    pthread_mutex_unlock(&lock);
    return v;
}

/* ---- recording: the runtime front end's __cudaRegisterFunction/Var/ManagedVar (rt_register.c) ---- */

void vmc_registry_add_kernel(const void *host_fun, const char *device_name) {
    struct vmc_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return;
    k->host_fun = host_fun;
    k->device_name = device_name; /* points into the executable's read-only data */
    pthread_mutex_lock(&lock);
    k->index = n_kernels;
    if (append((void ***)&kernels, &n_kernels, &cap_kernels, k) == 0)
        table_put(&kernel_table, host_fun, k);
    else
        free(k);
    pthread_mutex_unlock(&lock);
}

void vmc_registry_add_var(const void *host_var, const char *device_name, size_t size) {
    struct vmc_var *v = calloc(1, sizeof *v);
    if (!v)
        return;
    v->host_var = host_var;
    v->device_name = device_name;
    v->size = size;
    pthread_mutex_lock(&lock);
    v->index = n_vars;
    if (append((void ***)&vars, &n_vars, &cap_vars, v) == 0)
        table_put(&var_table, host_var, v);
    else
        free(v);
    pthread_mutex_unlock(&lock);
}
