package semaphore

// WithLookHook calls fn each time a waiter reads the queue and the slots.
func WithLookHook(fn func(key string)) Option { return func(c *config) { c.onLook = fn } }
