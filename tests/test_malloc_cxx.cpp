// test_malloc_cxx.cpp - C++ new/delete (plain, array, sized, aligned,
// nothrow) and the standard containers on the drop-in (LD_PRELOAD).
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

static int pass, fail;
#define CHECK(c) ((c) ? (void)pass++ : (void)(fail++, std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c)))

struct alignas(256) Big { char b[300]; };

// operator new[] of more than memory holds: std::bad_alloc
static bool huge_new_throws()
{
    try {
        volatile size_t huge = SIZE_MAX / 4;
        char *x = new char[huge];
        __asm__ volatile("" : : "r"(x) : "memory");   // not elided with the delete
        delete[] x;
    } catch (const std::bad_alloc &) {
        return true;
    }
    return false;
}

int main()
{
    for (int i = 0; i < 1000; i++) {
        int *p = new int(i);
        CHECK(*p == i);
        delete p;
        char *a = new char[i + 1];
        a[i] = 1;
        delete[] a;
    }
    Big *b = new Big;
    CHECK(reinterpret_cast<uintptr_t>(b) % 256 == 0);
    delete b;
    Big *ba = new Big[3];
    CHECK(reinterpret_cast<uintptr_t>(ba) % 256 == 0);
    delete[] ba;
    // aligned operator new of size 0: a unique block, not another live one
    {
        std::vector<char> live(100000, 'k');
        void *z1 = ::operator new(0, std::align_val_t(16384));
        void *z2 = ::operator new(0, std::align_val_t(32768));
        CHECK(z1 && z2 && z1 != z2);
        CHECK(reinterpret_cast<uintptr_t>(z1) % 16384 == 0 && reinterpret_cast<uintptr_t>(z2) % 32768 == 0);
        CHECK(!(static_cast<char *>(z1) >= live.data() && static_cast<char *>(z1) < live.data() + live.size()));
        ::operator delete(z1, std::align_val_t(16384));
        ::operator delete(z2, std::align_val_t(32768));
        size_t bad = 0;
        for (char c : live)
            bad += c != 'k';
        CHECK(bad == 0);
    }
    int *n = new (std::nothrow) int[10];
    CHECK(n != nullptr);
    delete[] n;
    CHECK(huge_new_throws());
    // a failing operator new calls the new-handler and retries, until the
    // handler removes itself: then std::bad_alloc
    {
        static int calls;
        std::set_new_handler([] {
            if (++calls == 2)
                std::set_new_handler(nullptr);
        });
        CHECK(huge_new_throws() && calls == 2);
        // new of every small and middle size, each written whole
        for (size_t sz = 1; sz <= 2100; sz++) {
            char *p = static_cast<char *>(::operator new(sz));
            for (size_t i = 0; i < sz; i++)
                p[i] = static_cast<char>(i);
            CHECK(p[sz - 1] == static_cast<char>(sz - 1));
            ::operator delete(p);
        }
    }
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([] {
            std::map<std::string, std::vector<int>> m;
            for (int i = 0; i < 20000; i++)
                m[std::to_string(i % 997)].push_back(i);
            size_t total = 0;
            for (auto &kv : m)
                total += kv.second.size();
            if (total != 20000)
                std::abort();
        });
    for (auto &t : ts)
        t.join();
    std::printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
