package lock

// WithLookHook calls fn each time a waiter reads its predecessor: once when
// it starts waiting and once per wake-up.
func WithLookHook(fn func(key string)) Option { return WithOnLook(fn) }
