import { Loading } from '../components/states.tsx';

export default function Page({ uid }: { uid: string }) {
  return <Loading label={`Loading ${uid}…`} />;
}
