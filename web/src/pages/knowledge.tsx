import { Ago } from '../components/ago.tsx';
import { useCallback, useEffect, useId, useRef, useState, type FormEvent } from 'react';
import type { components } from '@remit/client';
import { problemOf, type RemitClient } from '../api.ts';
import { Empty, Loading, Problem, useDocumentTitle } from '../components/states.tsx';
import {
  ACCEPT,
  contentTypeOf,
  fileProblem,
  formatBytes,
  TYPE_LABELS,
  uploadToStorage,
} from '../knowledge-upload.ts';
import { useSignedIn } from '../session.tsx';
import '../tables.css';
import './knowledge.css';

type KnowledgeDocument = components['schemas']['KnowledgeDocument'];

/** While a document is processing, the list is asked for again this often. */
export const KNOWLEDGE_POLL_MS = 2_000;
const PAGE_SIZE = 50;

/** One file on its way: presign → upload to storage (with progress) → confirm. */
interface Upload {
  id: number;
  filename: string;
  phase: 'starting' | 'uploading' | 'confirming' | 'done' | 'failed';
  loaded: number;
  total: number;
  error?: string;
}

type ListState =
  | { status: 'loading' }
  | { status: 'error'; message: string }
  | { status: 'ready'; items: KnowledgeDocument[]; total: number; problem?: string };

async function listDocuments(client: RemitClient, organizationUid: string) {
  const { data } = await client.GET('/api/knowledge', {
    params: { query: { organization_uid: organizationUid, per_page: PAGE_SIZE } },
  });
  return data;
}

/**
 * The organization's knowledge documents with their processing status, and uploads straight to object
 * storage (docs/knowledge.md): the API presigns a form, the browser POSTs the file to it, the API
 * confirms and processes it. The list is polled while anything is processing.
 */
export function KnowledgePage() {
  useDocumentTitle('Knowledge');
  const { client, organization } = useSignedIn();
  const organizationUid = organization.organization_uid;
  const [list, setList] = useState<ListState>({ status: 'loading' });
  const [uploads, setUploads] = useState<Upload[]>([]);

  const refresh = useCallback(async () => {
    try {
      const data = await listDocuments(client, organizationUid);
      setList({ status: 'ready', items: data.items, total: data._meta.total_items });
    } catch (error) {
      setList((current) =>
        current.status === 'ready'
          ? { ...current, problem: `${problemOf(error)} The list will be asked for again.` }
          : { status: 'error', message: problemOf(error) },
      );
    }
  }, [client, organizationUid]);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  // Says when a document this page saw processing is done, for those who cannot watch the table.
  const seenProcessing = useRef(new Set<string>());
  const [announcement, setAnnouncement] = useState('');
  useEffect(() => {
    if (list.status !== 'ready') return;
    const finished: string[] = [];
    for (const document of list.items) {
      if (document.status === 'processing') seenProcessing.current.add(document.uid);
      else if (seenProcessing.current.delete(document.uid)) {
        finished.push(`${document.filename} is ${document.status === 'ready' ? 'ready' : 'failed'}.`);
      }
    }
    if (finished.length > 0) setAnnouncement(finished.join(' '));
  }, [list]);

  const processing = list.status === 'ready' && list.items.some((d) => d.status === 'processing');
  useEffect(() => {
    if (!processing) return;
    const timer = window.setInterval(() => void refresh(), KNOWLEDGE_POLL_MS);
    return () => window.clearInterval(timer);
  }, [processing, refresh]);

  return (
    <div className="page knowledge">
      <h1>Knowledge</h1>
      <p className="muted">
        Files the agents can draw on: policies, rate cards, contracts. PDF, Word (.docx) and Excel (.xlsx)
        files are read for search; images are kept as they are. Up to 25 MB each.
      </p>
      <UploadForm
        client={client}
        organizationUid={organizationUid}
        uploads={uploads}
        setUploads={setUploads}
        onConfirmed={refresh}
      />
      <h2 id="documents-heading">Documents</h2>
      <p className="visually-hidden" role="status">
        {announcement}
      </p>
      <DocumentList list={list} onRetry={() => void refresh()} />
    </div>
  );
}

let nextUploadId = 1;

function UploadForm({
  client,
  organizationUid,
  uploads,
  setUploads,
  onConfirmed,
}: {
  client: RemitClient;
  organizationUid: string;
  uploads: Upload[];
  setUploads: (update: (list: Upload[]) => Upload[]) => void;
  onConfirmed: () => Promise<void>;
}) {
  const input = useRef<HTMLInputElement>(null);
  const hintId = useId();
  const errorId = useId();
  const [problem, setProblem] = useState<string>();
  const busy = uploads.some((u) => u.phase !== 'done' && u.phase !== 'failed');

  const change = (id: number, patch: Partial<Upload>) =>
    setUploads((list) => list.map((u) => (u.id === id ? { ...u, ...patch } : u)));

  const uploadOne = async (file: File) => {
    const id = nextUploadId++;
    setUploads((list) => [
      { id, filename: file.name, phase: 'starting', loaded: 0, total: file.size },
      ...list.filter((u) => u.phase !== 'done'),
    ]);
    try {
      const { data: presigned } = await client.POST('/api/knowledge/presign', {
        body: { filename: file.name, organization_uid: organizationUid, content_type: contentTypeOf(file)! },
      });
      change(id, { phase: 'uploading' });
      await uploadToStorage(presigned.presigned_post, file, (loaded, total) => change(id, { loaded, total }));
      change(id, { phase: 'confirming', loaded: file.size });
      await client.POST('/api/knowledge/confirm', {
        body: { knowledge_document_uid: presigned.knowledge_document_uid, organization_uid: organizationUid },
      });
      change(id, { phase: 'done' });
      await onConfirmed();
    } catch (error) {
      change(id, { phase: 'failed', error: problemOf(error) });
    }
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const files = [...(input.current?.files ?? [])];
    if (files.length === 0) {
      setProblem('Choose a file to upload.');
      input.current?.focus();
      return;
    }
    const refused = files.map(fileProblem).filter((p): p is string => p !== undefined);
    if (refused.length > 0) {
      setProblem(refused.join(' '));
      input.current?.focus();
      return;
    }
    setProblem(undefined);
    if (input.current) input.current.value = '';
    // One after another: the person sees each finish, and the storage is not asked for everything at once.
    void files.reduce((previous, file) => previous.then(() => uploadOne(file)), Promise.resolve());
  };

  return (
    <section className="panel upload" aria-labelledby="upload-heading">
      <h2 id="upload-heading">Upload</h2>
      <form onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor="knowledge-file">Files</label>
          <input
            ref={input}
            id="knowledge-file"
            type="file"
            multiple
            accept={ACCEPT}
            aria-describedby={problem ? `${hintId} ${errorId}` : hintId}
            aria-invalid={problem ? true : undefined}
            onChange={() => setProblem(undefined)}
          />
          <p className="field-hint" id={hintId}>
            PDF, DOCX, XLSX, PNG or JPEG, 25 MB at most. The file goes straight to storage.
          </p>
          {problem && (
            <p className="field-error" id={errorId} role="alert">
              {problem}
            </p>
          )}
        </div>
        <button type="submit" className="button button-primary" disabled={busy}>
          Upload
        </button>
      </form>
      {uploads.length > 0 && (
        <ul className="uploads" aria-label="Uploads">
          {uploads.map((upload) => (
            <UploadRow key={upload.id} upload={upload} />
          ))}
        </ul>
      )}
    </section>
  );
}

function UploadRow({ upload }: { upload: Upload }) {
  const labelId = useId();
  const percent = upload.total > 0 ? Math.round((upload.loaded / upload.total) * 100) : 0;
  const status = {
    starting: 'Starting…',
    uploading: `Uploading… ${percent} %`,
    confirming: 'Uploaded; starting processing…',
    done: 'Uploaded; processing started',
    failed: `Failed: ${upload.error ?? ''}`,
  }[upload.phase];
  return (
    <li className={`upload-row upload-${upload.phase}`}>
      <span className="upload-name" id={labelId}>
        {upload.filename}
      </span>
      {upload.phase !== 'failed' && (
        <progress
          aria-labelledby={labelId}
          max={100}
          value={upload.phase === 'starting' ? 0 : upload.phase === 'uploading' ? percent : 100}
        />
      )}
      <span className="upload-status" role={upload.phase === 'failed' ? 'alert' : 'status'}>
        {status}
      </span>
    </li>
  );
}

function DocumentList({ list, onRetry }: { list: ListState; onRetry: () => void }) {
  if (list.status === 'loading') return <Loading label="Loading the documents…" />;
  if (list.status === 'error') {
    return <Problem title="The documents could not be loaded" message={list.message} onRetry={onRetry} />;
  }
  if (list.items.length === 0) {
    return (
      <Empty title="No knowledge documents yet">
        <p>Upload a file above; it is listed here while it is processed.</p>
      </Empty>
    );
  }
  return (
    <>
      {list.problem && (
        <p className="form-problem" role="status">
          {list.problem}
        </p>
      )}
      {/* Focusable so that a keyboard can scroll it sideways on a narrow screen. */}
      <div className="table-scroll" tabIndex={0} role="region" aria-labelledby="documents-heading">
        <table className="table" aria-labelledby="documents-heading">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col" className="wide-only">
                Type
              </th>
              <th scope="col" className="numeric">
                Size
              </th>
              <th scope="col">Status</th>
              <th scope="col" className="wide-only">
                Uploaded
              </th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((document) => (
              <tr key={document.uid} data-uid={document.uid}>
                <th scope="row" className="document-name">
                  {document.filename}
                </th>
                <td className="wide-only">{TYPE_LABELS[document.content_type] ?? document.content_type}</td>
                <td className="numeric">
                  {document.file_size === null ? '—' : formatBytes(document.file_size)}
                </td>
                <td>
                  <DocumentStatus document={document} />
                </td>
                <td className="wide-only">
                  <Ago at={document.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {list.total > list.items.length && (
        <p className="muted">
          The newest {list.items.length} of {list.total} documents.
        </p>
      )}
    </>
  );
}

function DocumentStatus({ document }: { document: KnowledgeDocument }) {
  if (document.status === 'processing') {
    return (
      <span className="knowledge-status knowledge-processing">
        <span className="spinner" aria-hidden="true" />
        Processing
      </span>
    );
  }
  if (document.status === 'failed') {
    return (
      <span className="knowledge-status knowledge-failed">
        Failed<span className="knowledge-error">{document.error}</span>
      </span>
    );
  }
  return (
    <span className={`knowledge-status knowledge-${document.status}`}>
      {document.status === 'ready' ? 'Ready' : 'Waiting for the upload'}
    </span>
  );
}
