import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { publicClient, sessionClient, type RemitClient } from './api.ts';
import { forgetResources } from './use-resource.ts';
import type { SuccessBody } from '@remit/client';

type Me = SuccessBody<'get', '/api/me'>['data'];
export type Membership = Me['memberships'][number];

export interface SignedIn {
  status: 'signed-in';
  client: RemitClient;
  user: Me['user'];
  memberships: Membership[];
  /** The organization the console shows. */
  organization: Membership;
  chooseOrganization(uid: string): void;
  signOut(): Promise<void>;
  /** Reads `GET /api/me` again: after a change to the person's own memberships (a role, leaving). */
  reload(): Promise<void>;
}

export type Session =
  | { status: 'loading' }
  | { status: 'signed-out'; notice?: string | undefined }
  | { status: 'error'; message: string; retry(): void }
  | SignedIn;

interface SessionApi {
  session: Session;
  /** After sign-in answered the anti-forgery token: load who the person is. */
  begin(csrfToken: string): Promise<void>;
}

const SessionContext = createContext<SessionApi | null>(null);
const ORGANIZATION_KEY = 'remit.organization';

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<
    | { status: 'loading' }
    | { status: 'signed-out'; notice?: string | undefined }
    | { status: 'error'; message: string }
    | { status: 'signed-in'; client: RemitClient; me: Me; organizationUid: string }
  >({ status: 'loading' });

  const begin = useCallback(async (csrfToken: string) => {
    forgetResources();
    // A 401 ends this session only: a request still in flight from one signed out of (or replaced by a
    // new sign-in) must not end the next.
    const client: RemitClient = sessionClient(csrfToken, () => {
      forgetResources();
      setState((current) =>
        current.status === 'signed-in' && current.client === client
          ? { status: 'signed-out', notice: 'Your session has ended. Sign in again to go on.' }
          : current,
      );
    });
    const me = (await client.GET('/api/me')).data;
    const saved = window.localStorage.getItem(ORGANIZATION_KEY);
    const organizationUid =
      me.memberships.find((m) => m.organization_uid === saved)?.organization_uid ??
      me.default_organization_uid ??
      me.memberships[0]?.organization_uid;
    if (!organizationUid) {
      setState({ status: 'error', message: `${me.user.email} belongs to no organization yet.` });
      return;
    }
    setState({ status: 'signed-in', client, me, organizationUid });
  }, []);

  const load = useCallback(async () => {
    setState({ status: 'loading' });
    // The session cookie is HttpOnly: whether there is one, and its anti-forgery token, the API says.
    const { data, response } = await publicClient.raw.GET('/api/auth/session').catch(() => ({
      data: undefined,
      response: undefined,
    }));
    if (response === undefined) {
      setState({
        status: 'error',
        message: 'Remit could not be reached. Check your connection and try again.',
      });
    } else if (data) {
      await begin(data.data.csrf_token).catch((error: unknown) =>
        setState({ status: 'error', message: error instanceof Error ? error.message : String(error) }),
      );
    } else if (response.status === 401) {
      setState({ status: 'signed-out' });
    } else {
      setState({ status: 'error', message: `Remit answered ${response.status} when asked for the session.` });
    }
  }, [begin]);

  useEffect(() => {
    void load();
  }, [load]);

  const session = useMemo<Session>(() => {
    if (state.status === 'error') return { ...state, retry: () => void load() };
    if (state.status !== 'signed-in') return state;
    const { client, me, organizationUid } = state;
    return {
      status: 'signed-in',
      client,
      user: me.user,
      memberships: me.memberships,
      organization: me.memberships.find((m) => m.organization_uid === organizationUid)!,
      chooseOrganization: (uid) => {
        window.localStorage.setItem(ORGANIZATION_KEY, uid);
        setState({ ...state, organizationUid: uid });
      },
      signOut: async () => {
        await client.POST('/api/auth/sign-out');
        forgetResources();
        setState({ status: 'signed-out', notice: 'You have signed out.' });
      },
      reload: async () => {
        const fresh = (await client.GET('/api/me')).data;
        forgetResources();
        setState((current) => {
          if (current.status !== 'signed-in' || current.client !== client) return current;
          const stays = fresh.memberships.some((m) => m.organization_uid === current.organizationUid);
          const organizationUid = stays
            ? current.organizationUid
            : (fresh.default_organization_uid ?? fresh.memberships[0]?.organization_uid);
          return organizationUid
            ? { ...current, me: fresh, organizationUid }
            : { status: 'error', message: `${fresh.user.email} belongs to no organization any more.` };
        });
      },
    };
  }, [state, load]);

  const api = useMemo(() => ({ session, begin }), [session, begin]);
  return <SessionContext.Provider value={api}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionApi {
  const api = useContext(SessionContext);
  if (!api) throw new Error('useSession outside SessionProvider');
  return api;
}

/** The signed-in session, for components that only render while signed in. */
export function useSignedIn(): SignedIn {
  const { session } = useSession();
  if (session.status !== 'signed-in') throw new Error('useSignedIn while not signed in');
  return session;
}
