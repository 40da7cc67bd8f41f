import { type RefObject, useEffect, useState } from "react";

/** Whether the element is on screen and the visitor has not asked for reduced motion: animations run only then. */
export function useAnimates(ref: RefObject<Element | null>): boolean {
  const [isVisible, setVisible] = useState(false);
  const [isReduced, setReduced] = useState(false);
  useEffect(() => {
    const query = window.matchMedia?.("(prefers-reduced-motion: reduce)");
    setReduced(Boolean(query?.matches));
    const onChange = () => setReduced(Boolean(query?.matches));
    query?.addEventListener?.("change", onChange);
    const el = ref.current;
    let observer: IntersectionObserver | null = null;
    if (el && typeof IntersectionObserver !== "undefined") {
      observer = new IntersectionObserver((entries) => setVisible(entries.some((e) => e.isIntersecting)));
      observer.observe(el);
    } else setVisible(true);
    return () => {
      query?.removeEventListener?.("change", onChange);
      observer?.disconnect();
    };
  }, [ref]);
  return isVisible && !isReduced;
}
